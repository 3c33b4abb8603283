{{/* The name of every object: the release name, or <release>-chronos. */}}
{{- define "chronos.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels: stable across upgrades. */}}
{{- define "chronos.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "chronos.labels" -}}
{{ include "chronos.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding the tokens file. */}}
{{- define "chronos.tokensSecret" -}}
{{- if .Values.apiTokens.tokens -}}
{{ include "chronos.fullname" . }}-api-tokens
{{- else if .Values.apiTokens.existingSecret -}}
{{ .Values.apiTokens.existingSecret }}
{{- else -}}
{{ fail "apiTokens: set existingSecret or tokens (chronos run refuses to start without API credentials; docs/security.md)" }}
{{- end -}}
{{- end -}}
