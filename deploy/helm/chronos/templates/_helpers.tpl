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

{{/* chronos.bytes: a memory amount in bytes (as a float string), from a
Kubernetes quantity (512Mi, 1Gi, 1G, 536870912) or a GOMEMLIMIT (900MiB);
empty when it is neither. */}}
{{- define "chronos.bytes" -}}
{{- $s := toString . -}}
{{- $units := dict "" 1.0 "B" 1.0 "k" 1e3 "K" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "Ki" 1024.0 "KiB" 1024.0 "Mi" 1048576.0 "MiB" 1048576.0 "Gi" 1073741824.0 "GiB" 1073741824.0 "Ti" 1099511627776.0 "TiB" 1099511627776.0 -}}
{{- if regexMatch "^[0-9]+(\\.[0-9]+)?[A-Za-z]*$" $s -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $s -}}
{{- $unit := trimPrefix $num $s -}}
{{- if hasKey $units $unit -}}
{{- mulf (float64 $num) (get $units $unit) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* chronos.checkMemory: refuse a goMemLimit the Go runtime cannot parse
(it aborts at start on a malformed GOMEMLIMIT: a crash loop) or one not
under resources.limits.memory (the runtime would not collect harder before
the kernel kills the container). */}}
{{- define "chronos.checkMemory" -}}
{{- $g := toString .Values.goMemLimit -}}
{{- if .Values.goMemLimit -}}
{{- if not (regexMatch "^(off|[0-9]+(B|KiB|MiB|GiB|TiB)?)$" $g) -}}
{{- fail (printf "goMemLimit %q: GOMEMLIMIT takes a byte count with B, KiB, MiB, GiB or TiB (900MiB, not 900Mi or 900M), or off; the Go runtime aborts at start on anything else" $g) -}}
{{- end -}}
{{- $mem := toString (dig "limits" "memory" "" (.Values.resources | default dict)) -}}
{{- $lb := include "chronos.bytes" $mem -}}
{{- $gb := include "chronos.bytes" $g -}}
{{- if and $mem $lb $gb (ge (float64 $gb) (float64 $lb)) -}}
{{- fail (printf "goMemLimit %s is not under resources.limits.memory %s: the Go runtime would not collect harder before the kernel kills the container; set it about 10%% under the limit (900MiB for 1Gi), or empty" $g $mem) -}}
{{- end -}}
{{- end -}}
{{- end -}}
