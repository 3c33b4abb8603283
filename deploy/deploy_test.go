package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/api"
	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/deploy/deploytest"
	"github.com/chronos-scheduler/chronos/embedded"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/topology"
)

// ---------------------------------------------------------------------------
// The Dockerfile

type instruction struct {
	cmd  string // upper case
	args string
}

type stage struct {
	from, name string
	ins        []instruction
}

// dockerfile parses the Dockerfile into stages (comments dropped, line
// continuations joined).
func dockerfile(t *testing.T) []stage {
	t.Helper()
	var stages []stage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			return
		}
		require.NotEmpty(t, stages, "Dockerfile: %s before FROM", in.cmd)
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	sc := bufio.NewScanner(bytes.NewReader(deploytest.ReadFile(t, "Dockerfile")))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}

// execForm decodes a JSON-array (exec form) argument.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var out []string
	require.NoError(t, json.Unmarshal([]byte(in.args), &out), "%s must use the exec (JSON) form: %s", in.cmd, in.args)
	return out
}

// shellWords splits a shell command line on blanks, honouring quotes.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// image is what the Dockerfile promises about the runtime image.
type image struct {
	entrypoint []string
	cmd        []string
	env        map[string]string
	user       string
	expose     []string
	volumes    []string
	binary     string // path of the binary in the image
	buildOut   string // -o of the go build line
	buildEnv   []string
	buildArgs  []string // go build arguments
}

func parseImage(t *testing.T) image {
	t.Helper()
	stages := dockerfile(t)
	require.GreaterOrEqual(t, len(stages), 2, "multi-stage build")
	build, final := stages[0], stages[len(stages)-1]
	im := image{env: map[string]string{}}

	// Build stage: golang image, sources copied to the work dir, one go build.
	require.True(t, strings.HasPrefix(build.from, "golang:1.26"), "build stage FROM %s", build.from)
	require.NotEmpty(t, build.name, "the build stage is named")
	copied := false
	for _, in := range build.ins {
		if in.cmd == "COPY" && strings.Fields(in.args)[0] == "." {
			copied = true
		}
		if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		require.True(t, copied, "COPY . . comes before go build")
		words := shellWords(in.args)
		for len(words) > 0 && strings.Contains(words[0], "=") {
			im.buildEnv = append(im.buildEnv, words[0])
			words = words[1:]
		}
		require.GreaterOrEqual(t, len(words), 2)
		require.Equal(t, []string{"go", "build"}, words[:2], "RUN %s", in.args)
		im.buildArgs = words[1:]
	}
	require.NotEmpty(t, im.buildArgs, "the build stage runs go build")
	require.Contains(t, im.buildEnv, "CGO_ENABLED=0")
	require.Contains(t, im.buildArgs, "-trimpath")
	require.Contains(t, im.buildArgs, "./cmd/chronos")
	i := slices.Index(im.buildArgs, "-ldflags")
	require.True(t, i >= 0 && im.buildArgs[i+1] == "-s -w", "-ldflags \"-s -w\": %q", im.buildArgs)
	i = slices.Index(im.buildArgs, "-o")
	require.True(t, i >= 0, "go build -o")
	im.buildOut = im.buildArgs[i+1]

	// Runtime stage: distroless nonroot (or scratch with a numeric user).
	switch final.from {
	case "gcr.io/distroless/static-debian12:nonroot":
		im.user = "65532"
	case "scratch":
	default:
		t.Fatalf("runtime stage FROM %s: want distroless static nonroot or scratch", final.from)
	}
	for _, in := range final.ins {
		switch in.cmd {
		case "COPY":
			words := shellWords(in.args)
			if slices.Contains(words, "--from="+build.name) && slices.Contains(words, im.buildOut) {
				im.binary = words[len(words)-1]
			}
		case "ENV":
			for _, w := range shellWords(in.args) {
				k, v, ok := strings.Cut(w, "=")
				require.True(t, ok, "ENV %s: use KEY=VALUE", in.args)
				im.env[k] = v
			}
		case "USER":
			im.user, _, _ = strings.Cut(in.args, ":")
		case "EXPOSE":
			im.expose = append(im.expose, strings.Fields(in.args)...)
		case "VOLUME":
			im.volumes = append(im.volumes, strings.Fields(in.args)...)
		case "ENTRYPOINT":
			im.entrypoint = execForm(t, in)
		case "CMD":
			im.cmd = execForm(t, in)
		}
	}
	require.NotEmpty(t, im.binary, "the runtime stage copies %s from the build stage", im.buildOut)
	return im
}

// ---------------------------------------------------------------------------
// The binary, built with the Dockerfile's own go build line

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// chronosBinary builds cmd/chronos once per test run, with the environment
// and flags of the Dockerfile's go build line (so that line is checked too).
func chronosBinary(t *testing.T) string {
	t.Helper()
	im := parseImage(t)
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chronos-deploy-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "chronos")
		args := slices.Clone(im.buildArgs)
		args[slices.Index(args, "-o")+1] = binPath
		cmd := exec.Command("go", args...)
		cmd.Dir = deploytest.Root
		cmd.Env = append(os.Environ(), im.buildEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// runChronos runs the binary with args and exactly env (plus PATH and HOME).
func runChronos(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(chronosBinary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var flagLine = regexp.MustCompile(`^\s+(?:-[a-zA-Z], )?--([a-z0-9-]+)`)

// flagsOf checks that args is a valid chronos command (its --help exits 0
// and is the help of that command) and returns its flags.
func flagsOf(t *testing.T, args []string) map[string]bool {
	t.Helper()
	require.NotEmpty(t, args)
	out, err := runChronos(t, nil, append(slices.Clone(args), "--help")...)
	require.NoError(t, err, "chronos %s --help:\n%s", strings.Join(args, " "), out)
	require.Contains(t, out, "Usage:\n  chronos "+strings.Join(args, " "), "chronos %s is not a command", strings.Join(args, " "))
	flags := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil && m[1] != "help" {
			flags[m[1]] = true
		}
	}
	require.NotEmpty(t, flags)
	return flags
}

// envName is the variable a flag reads (cmd/chronos EnvName).
func envName(flag string) string {
	return "CHRONOS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// checkEnv checks that every CHRONOS_* variable is a flag of the command
// args and that `chronos run` accepts every value: with CHRONOS_BROKERS
// emptied, run stops at its first check after reading the variables.
func checkEnv(t *testing.T, where string, args []string, env map[string]string) {
	t.Helper()
	flags := flagsOf(t, args)
	known := map[string]bool{}
	for f := range flags {
		known[envName(f)] = true
	}
	values := map[string]string{}
	for k, v := range env {
		if !strings.HasPrefix(k, "CHRONOS_") {
			continue
		}
		if !known[k] {
			t.Errorf("%s sets %s, which is no flag of `chronos %s` (flags: %v)", where, k, strings.Join(args, " "), slices.Sorted(maps.Keys(flags)))
		}
		values[k] = v
	}
	if len(args) == 1 && args[0] == "run" {
		values["CHRONOS_BROKERS"] = ""
		out, err := runChronos(t, values, "run")
		require.Error(t, err)
		require.Contains(t, out, "CHRONOS_BROKERS) is required", "%s: chronos run rejects the environment %v:\n%s", where, values, out)
	}
}

// httpPort is the port of CHRONOS_HTTP_ADDR.
func httpPort(t *testing.T, env map[string]string) string {
	t.Helper()
	addr, ok := env["CHRONOS_HTTP_ADDR"]
	require.True(t, ok, "CHRONOS_HTTP_ADDR is set (the image's ENV or the manifest)")
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// requireRoute checks that the server serves GET path.
func requireRoute(t *testing.T, path string) {
	t.Helper()
	require.Contains(t, api.Routes(), "GET "+path, "the server has no route GET %s", path)
}

// ---------------------------------------------------------------------------
// Dockerfile

func TestDockerfile(t *testing.T) {
	t.Parallel()
	im := parseImage(t)
	require.Equal(t, []string{im.binary}, im.entrypoint, "ENTRYPOINT runs the copied binary")
	require.Equal(t, "/chronos", im.binary)
	require.Equal(t, []string{"run"}, im.cmd)
	_, err := strconv.Atoi(im.user)
	require.NoError(t, err, "USER is numeric (runAsNonRoot can check it): %q", im.user)
	require.NotEqual(t, "0", im.user)

	require.Equal(t, "/data", im.env["CHRONOS_DATA_DIR"])
	require.Equal(t, "0.0.0.0:8080", im.env["CHRONOS_HTTP_ADDR"])
	require.Equal(t, []string{httpPort(t, im.env)}, im.expose, "EXPOSE is the HTTP port")
	require.Equal(t, []string{im.env["CHRONOS_DATA_DIR"]}, im.volumes, "VOLUME is the data dir")
	checkEnv(t, "Dockerfile ENV", im.cmd, im.env)

	ignore := string(deploytest.ReadFile(t, ".dockerignore"))
	for _, p := range []string{".git", ".chronos"} {
		require.Regexp(t, `(?m)^(\*\*/)?`+regexp.QuoteMeta(p)+`$`, ignore, ".dockerignore excludes %s", p)
	}
	for _, needed := range []string{"go.mod", "go.sum", "cmd", "*.go", "third_party"} {
		require.NotRegexp(t, `(?m)^`+regexp.QuoteMeta(needed)+`/?$`, ignore, ".dockerignore must keep %s", needed)
	}
}

// ---------------------------------------------------------------------------
// docker-compose.yml

// mounts returns a compose service's volumes as container path -> source.
func mounts(t *testing.T, svc map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range deploytest.List(svc["volumes"]) {
		parts := strings.Split(deploytest.Str(v), ":")
		require.GreaterOrEqual(t, len(parts), 2, "volume %v: use SOURCE:TARGET", v)
		out[parts[1]] = parts[0]
	}
	return out
}

// hostFile maps a path inside a compose container to the repository file
// bind-mounted there ("" if none).
func hostFile(t *testing.T, svc map[string]any, path string) string {
	t.Helper()
	best := ""
	for target, source := range mounts(t, svc) {
		if !strings.HasPrefix(source, "./") {
			continue
		}
		if (path == target || strings.HasPrefix(path, target+"/")) && len(target) > len(best) {
			best = target
		}
	}
	if best == "" {
		return ""
	}
	return filepath.Join(deploytest.Root, mounts(t, svc)[best], strings.TrimPrefix(path, best))
}

func composeEnv(svc map[string]any) map[string]string {
	env := map[string]string{}
	for k, v := range deploytest.Dict(svc["environment"]) {
		env[k] = deploytest.Str(v)
	}
	return env
}

func TestCompose(t *testing.T) {
	t.Parallel()
	c := deploytest.YAMLDoc(t, "docker-compose.yml")
	services := deploytest.Dict(c["services"])
	for _, name := range []string{"kafka", "chronos-1", "chronos-2", "prometheus", "grafana"} {
		require.Contains(t, services, name)
	}
	declared := deploytest.Dict(c["volumes"])

	// depends_on: long form with a condition; service_healthy only on a
	// service with a healthcheck.
	for name, s := range services {
		for dep, cond := range deploytest.Dict(deploytest.Dict(s)["depends_on"]) {
			require.Contains(t, services, dep, "%s depends on %s", name, dep)
			condition := deploytest.Str(deploytest.Dict(cond)["condition"])
			require.Contains(t, []string{"service_started", "service_healthy", "service_completed_successfully"}, condition, "%s -> %s", name, dep)
			if condition == "service_healthy" {
				require.NotNil(t, deploytest.Dict(services[dep])["healthcheck"], "%s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
		for target, source := range mounts(t, deploytest.Dict(s)) {
			if strings.HasPrefix(source, "./") {
				_, err := os.Stat(filepath.Join(deploytest.Root, source))
				require.NoError(t, err, "%s mounts %s on %s", name, source, target)
			} else {
				require.Contains(t, declared, source, "%s: named volume %s is declared", name, source)
			}
		}
	}
	for _, name := range []string{"chronos-1", "chronos-2", "prometheus"} {
		require.NotEmpty(t, deploytest.Dict(services[name])["depends_on"], "%s has depends_on", name)
	}

	// Kafka: KRaft single node.
	kafka := deploytest.Dict(services["kafka"])
	require.Regexp(t, `^apache/kafka:\d`, deploytest.Str(kafka["image"]))
	kenv := composeEnv(kafka)
	for k, want := range map[string]string{
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
	} {
		require.Equal(t, want, kenv[k], k)
	}
	for _, k := range []string{"KAFKA_NODE_ID", "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_LISTENERS",
		"KAFKA_ADVERTISED_LISTENERS", "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "KAFKA_INTER_BROKER_LISTENER_NAME"} {
		require.NotEmpty(t, kenv[k], k)
	}
	require.Equal(t, kenv["KAFKA_NODE_ID"]+"@kafka:9093", kenv["KAFKA_CONTROLLER_QUORUM_VOTERS"])
	protocols := map[string]bool{}
	for _, p := range strings.Split(kenv["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"], ",") {
		name, _, _ := strings.Cut(p, ":")
		protocols[name] = true
	}
	for _, l := range strings.Split(kenv["KAFKA_LISTENERS"], ",") {
		name, _, _ := strings.Cut(l, "://")
		require.True(t, protocols[name], "listener %s has a security protocol", name)
	}
	require.True(t, strings.Contains(kenv["KAFKA_LISTENERS"], kenv["KAFKA_INTER_BROKER_LISTENER_NAME"]+"://"))
	require.Contains(t, strings.Join(shellWords(strings.Join(func() []string {
		var s []string
		for _, w := range deploytest.List(deploytest.Dict(kafka["healthcheck"])["test"]) {
			s = append(s, deploytest.Str(w))
		}
		return s
	}(), " ")), " "), "/opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server localhost:9092")

	// Chronos instances.
	im := parseImage(t)
	dataVolumes := map[string]string{}
	var targets []string
	for _, name := range []string{"chronos-1", "chronos-2"} {
		s := deploytest.Dict(services[name])
		require.Equal(t, "service_healthy", deploytest.Str(deploytest.Get(s, "depends_on", "kafka", "condition")), "%s waits for a healthy kafka", name)
		var command []string
		for _, w := range deploytest.List(s["command"]) {
			command = append(command, deploytest.Str(w))
		}
		if command == nil {
			command = im.cmd
		}
		require.Equal(t, []string{"run"}, command, name)
		env := maps.Clone(im.env)
		maps.Copy(env, composeEnv(s))
		checkEnv(t, "docker-compose.yml "+name, command, env)
		for _, b := range strings.Split(env["CHRONOS_BROKERS"], ",") {
			require.Contains(t, strings.Split(kenv["KAFKA_ADVERTISED_LISTENERS"], ","), "PLAINTEXT://"+b,
				"%s: broker %s is an advertised listener of kafka", name, b)
		}
		port := httpPort(t, env)
		ports := deploytest.List(s["ports"])
		require.Len(t, ports, 1)
		published := deploytest.Str(ports[0]) // [host-ip:]host-port:container-port
		container := published[strings.LastIndexByte(published, ':')+1:]
		require.Equal(t, port, container, "%s publishes the HTTP port", name)
		vol, ok := mounts(t, s)[env["CHRONOS_DATA_DIR"]]
		require.True(t, ok, "%s mounts a volume on its data dir %s", name, env["CHRONOS_DATA_DIR"])
		require.NotContains(t, dataVolumes, vol, "%s and %s share the data volume %s", name, dataVolumes[vol], vol)
		dataVolumes[vol] = name
		targets = append(targets, name+":"+port)
	}
	require.Equal(t, deploytest.Str(deploytest.Dict(services["chronos-1"])["image"]), deploytest.Str(deploytest.Dict(services["chronos-2"])["image"]))
	require.Equal(t, ".", deploytest.Str(deploytest.Dict(services["chronos-1"])["build"]), "built from the Dockerfile")

	// Prometheus: its config and rules are the files of deploy/prometheus.
	prom := deploytest.Dict(services["prometheus"])
	config := "/etc/prometheus/prometheus.yml"
	for _, a := range deploytest.List(prom["command"]) {
		if v, ok := strings.CutPrefix(deploytest.Str(a), "--config.file="); ok {
			config = v
		}
	}
	configFile := hostFile(t, prom, config)
	require.Equal(t, filepath.Join(deploytest.Root, "deploy/prometheus/prometheus.yml"), configFile)
	pcfg := deploytest.YAMLDoc(t, "deploy/prometheus/prometheus.yml")
	var rules []string
	for _, r := range deploytest.List(pcfg["rule_files"]) {
		rules = append(rules, hostFile(t, prom, deploytest.Str(r)))
	}
	require.Equal(t, []string{filepath.Join(deploytest.Root, "deploy/prometheus/alerts.yml")}, rules)
	jobs := deploytest.List(pcfg["scrape_configs"])
	require.Len(t, jobs, 1)
	require.Equal(t, "chronos", deploytest.Str(deploytest.Get(jobs[0], "job_name")), "the rules and the dashboard select job=\"chronos\"")
	if p := deploytest.Str(deploytest.Get(jobs[0], "metrics_path")); p != "" {
		requireRoute(t, p)
	}
	var scraped []string
	for _, sc := range deploytest.List(deploytest.Get(jobs[0], "static_configs")) {
		for _, tg := range deploytest.List(deploytest.Get(sc, "targets")) {
			scraped = append(scraped, deploytest.Str(tg))
		}
	}
	require.ElementsMatch(t, targets, scraped, "Prometheus scrapes every Chronos instance on its HTTP port")

	// Grafana: the provisioned datasource is the Prometheus service, the
	// provider reads the directory holding the dashboard.
	graf := deploytest.Dict(services["grafana"])
	require.Equal(t, filepath.Join(deploytest.Root, "deploy/grafana/provisioning"), hostFile(t, graf, "/etc/grafana/provisioning"))
	dsDoc := deploytest.YAMLDoc(t, "deploy/grafana/provisioning/datasources/prometheus.yml")
	ds := deploytest.List(dsDoc["datasources"])
	require.Len(t, ds, 1)
	require.Equal(t, "prometheus", deploytest.Str(deploytest.Get(ds[0], "type")))
	require.Equal(t, "http://prometheus:9090", deploytest.Str(deploytest.Get(ds[0], "url")))
	prov := deploytest.YAMLDoc(t, "deploy/grafana/provisioning/dashboards/chronos.yml")
	dir := hostFile(t, graf, deploytest.Str(deploytest.Get(prov, "providers", 0, "options", "path")))
	require.Equal(t, filepath.Join(deploytest.Root, "deploy/grafana/dashboards"), dir)
	_, err := os.Stat(filepath.Join(dir, "chronos.json"))
	require.NoError(t, err)
	if home := composeEnv(graf)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" {
		_, err := os.Stat(hostFile(t, graf, home))
		require.NoError(t, err, "home dashboard %s", home)
	}
}

// ---------------------------------------------------------------------------
// Kubernetes

func kind(t *testing.T, docs []map[string]any, k string) map[string]any {
	t.Helper()
	for _, d := range docs {
		if d["kind"] == k {
			return d
		}
	}
	t.Fatalf("no %s", k)
	return nil
}

func TestKubernetes(t *testing.T) {
	t.Parallel()
	docs := deploytest.YAMLDocs(t, "deploy/kubernetes/chronos.yaml")
	require.Equal(t, "chronos", deploytest.Str(deploytest.Get(kind(t, docs, "Deployment"), "metadata", "name")))
	checkKubernetes(t, "deploy/kubernetes/chronos.yaml", docs)
}

// checkKubernetes checks the Deployment, Service and PodDisruptionBudget of
// docs (the plain manifests, or the Helm chart rendered) against the image
// and the chronos binary: command, environment, port, probes, data dir.
func checkKubernetes(t *testing.T, where string, docs []map[string]any) {
	t.Helper()
	dep := kind(t, docs, "Deployment")
	podLabels := deploytest.Dict(deploytest.Get(dep, "spec", "template", "metadata", "labels"))
	require.Equal(t, deploytest.Dict(deploytest.Get(dep, "spec", "selector", "matchLabels")), podLabels)
	containers := deploytest.List(deploytest.Get(dep, "spec", "template", "spec", "containers"))
	require.Len(t, containers, 1)
	ctr := deploytest.Dict(containers[0])

	im := parseImage(t)
	args := im.cmd
	if a := deploytest.List(ctr["args"]); a != nil {
		args = nil
		for _, w := range a {
			args = append(args, deploytest.Str(w))
		}
	}
	require.Nil(t, ctr["command"], "keep the image's ENTRYPOINT")
	require.Equal(t, []string{"run"}, args)
	env := maps.Clone(im.env)
	for _, e := range deploytest.List(ctr["env"]) {
		name := deploytest.Str(deploytest.Get(e, "name"))
		if deploytest.Get(e, "valueFrom") != nil {
			env[name] = "" // not known here; only the name is checked
			if strings.HasPrefix(name, "CHRONOS_") {
				require.Contains(t, flagsOf(t, args), strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, "CHRONOS_"), "_", "-")), name)
			}
			delete(env, name)
			continue
		}
		env[name] = deploytest.Str(deploytest.Get(e, "value"))
	}
	require.NotEmpty(t, env["CHRONOS_BROKERS"])
	checkEnv(t, where, args, env)

	port := httpPort(t, env)
	ports := deploytest.List(ctr["ports"])
	require.Len(t, ports, 1)
	require.Equal(t, "http", deploytest.Str(deploytest.Get(ports[0], "name")))
	require.Equal(t, port, deploytest.Str(deploytest.Get(ports[0], "containerPort")))
	probe := func(name, path string) {
		p := deploytest.Dict(ctr[name])
		require.NotNil(t, p, name)
		require.Equal(t, path, deploytest.Str(deploytest.Get(p, "httpGet", "path")), name)
		requireRoute(t, path)
		require.Contains(t, []string{"http", port}, deploytest.Str(deploytest.Get(p, "httpGet", "port")), name)
	}
	probe("readinessProbe", "/readyz")
	probe("livenessProbe", "/healthz")
	if ctr["startupProbe"] != nil {
		probe("startupProbe", "/healthz")
	}
	require.NotNil(t, deploytest.Get(ctr, "resources", "requests"))
	require.NotNil(t, deploytest.Get(ctr, "resources", "limits"))

	// The data dir is an emptyDir (state is rebuilt from the changelog).
	vols := map[string]map[string]any{}
	for _, v := range deploytest.List(deploytest.Get(dep, "spec", "template", "spec", "volumes")) {
		vols[deploytest.Str(deploytest.Get(v, "name"))] = deploytest.Dict(v)
	}
	var dataVol string
	for _, m := range deploytest.List(ctr["volumeMounts"]) {
		if deploytest.Str(deploytest.Get(m, "mountPath")) == env["CHRONOS_DATA_DIR"] {
			dataVol = deploytest.Str(deploytest.Get(m, "name"))
		}
	}
	require.NotEmpty(t, dataVol, "a volume is mounted on the data dir %s", env["CHRONOS_DATA_DIR"])
	require.Contains(t, vols[dataVol], "emptyDir")
	require.Equal(t, im.user, deploytest.Str(deploytest.Get(dep, "spec", "template", "spec", "securityContext", "runAsUser")), "runAsUser is the image's USER")

	svc := kind(t, docs, "Service")
	for k, v := range deploytest.Dict(deploytest.Get(svc, "spec", "selector")) {
		require.Equal(t, podLabels[k], v, "Service selector %s", k)
	}
	sp := deploytest.List(deploytest.Get(svc, "spec", "ports"))
	require.Len(t, sp, 1)
	require.Equal(t, "http", deploytest.Str(deploytest.Get(sp[0], "name")))
	require.Equal(t, "8080", deploytest.Str(deploytest.Get(sp[0], "port")))
	require.Contains(t, []string{"http", port}, deploytest.Str(deploytest.Get(sp[0], "targetPort")))

	pdb := kind(t, docs, "PodDisruptionBudget")
	require.Equal(t, "1", deploytest.Str(deploytest.Get(pdb, "spec", "maxUnavailable")))
	require.Equal(t, podLabels, deploytest.Dict(deploytest.Get(pdb, "spec", "selector", "matchLabels")))
}

func TestKEDA(t *testing.T) {
	t.Parallel()
	n := topology.Names{}
	groups := map[string]bool{string(n.SchedulerGroup()): true, string(n.ClockGroup()): true, string(n.RouterGroup()): true}
	dep := kind(t, deploytest.YAMLDocs(t, "deploy/kubernetes/chronos.yaml"), "Deployment")
	var brokers string
	for _, e := range deploytest.List(deploytest.Get(dep, "spec", "template", "spec", "containers", 0, "env")) {
		if deploytest.Str(deploytest.Get(e, "name")) == "CHRONOS_BROKERS" {
			brokers = deploytest.Str(deploytest.Get(e, "value"))
		}
	}

	byTarget := map[string]map[string]any{}
	for _, so := range deploytest.YAMLDocs(t, "deploy/kubernetes/keda-scaledobject.yaml") {
		require.Equal(t, "keda.sh/v1alpha1", so["apiVersion"])
		require.Equal(t, "ScaledObject", so["kind"])
		byTarget[deploytest.Str(deploytest.Get(so, "spec", "scaleTargetRef", "name"))] = so
	}
	replicas := func(so map[string]any) {
		t.Helper()
		lo, hi := deploytest.Get(so, "spec", "minReplicaCount"), deploytest.Get(so, "spec", "maxReplicaCount")
		require.IsType(t, 0, hi)
		require.LessOrEqual(t, hi.(int), int(topology.DefaultPartitions), "maxReplicaCount above the partition count: the extra replicas are idle")
		require.IsType(t, 0, lo)
		require.GreaterOrEqual(t, lo.(int), 1)
		require.LessOrEqual(t, lo.(int), hi.(int))
	}

	so := byTarget[deploytest.Str(deploytest.Get(dep, "metadata", "name"))]
	require.NotNil(t, so, "a ScaledObject targets the chronos Deployment")
	replicas(so)
	shipped := deploytest.ScaledObject(t, so)
	require.Equal(t, lag.ScaledObjectFor(topology.Layout{Names: n}), shipped, "chronos lag evaluates what deploy/kubernetes ships")
	require.Equal(t, int64(topology.DefaultPartitions), shipped.MaxReplicas, "one replica per partition at most")
	for _, tr := range deploytest.List(deploytest.Get(so, "spec", "triggers")) {
		md := deploytest.Dict(deploytest.Get(tr, "metadata"))
		if deploytest.Str(deploytest.Get(tr, "type")) != "kafka" {
			continue
		}
		require.Equal(t, brokers, deploytest.Str(md["bootstrapServers"]), "KEDA asks the brokers Chronos uses")
		require.NotEmpty(t, md["topic"], "topic pinned: without it KEDA sums every topic of the group under one threshold")
	}
	requireKEDAVersion(t, so)

	ex := byTarget["my-executor"]
	require.NotNil(t, ex, "the executor example")
	replicas(ex)
	md := deploytest.Dict(deploytest.Get(ex, "spec", "triggers", 0, "metadata"))
	require.Equal(t, "kafka", deploytest.Str(deploytest.Get(ex, "spec", "triggers", 0, "type")))
	require.Equal(t, string(n.Dispatch()), deploytest.Str(md["topic"]))
	require.Equal(t, "my-executor", deploytest.Str(md["consumerGroup"]))
	require.False(t, groups[deploytest.Str(md["consumerGroup"])], "an executor must not use a Chronos group")
}

// ---------------------------------------------------------------------------
// Metrics

// metricSet is every metric a `chronos run` instance registers, with its
// label names, and the type of those that show in a scrape.
type metricSet struct {
	labels map[string][]string
	types  map[string]dto.MetricType
}

var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*, constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// recorder registers on a real registry and remembers every described metric.
type recorder struct {
	reg    *prometheus.Registry
	labels map[string][]string
}

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			return fmt.Errorf("cannot read %s", d)
		}
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				labels = append(labels, l)
			}
		}
		r.labels[m[1]] = labels
	}
	return r.reg.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *recorder) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// registeredMetrics registers what an instance with its HTTP server registers
// (Go and process collectors, the processors' metrics, the lag collector)
// against an embedded broker.
func registeredMetrics(t *testing.T) metricSet {
	t.Helper()
	b, err := embedded.Start(embedded.Options{Partitions: 2})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	r := &recorder{reg: prometheus.NewRegistry(), labels: map[string][]string{}}
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	layout := topology.Layout{Partitions: 2, Replication: -1}
	sys, err := instance.New(t.Context(), instance.Config{Kafka: clients.Default(b.Addrs()...), Layout: layout,
		DataDir: t.TempDir(), Registerer: r, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(sys.Client().Close)
	n := layout.Names
	r.MustRegister(&lag.Collector{Admin: kadm.NewClient(sys.Client()), Policy: lag.Earliest, Timeout: 5 * time.Second,
		Targets: []lag.Target{{Group: string(n.SchedulerGroup()), Topic: string(n.Jobs())}}})
	mfs, err := r.reg.Gather()
	require.NoError(t, err)
	ms := metricSet{labels: r.labels, types: map[string]dto.MetricType{}}
	for _, mf := range mfs {
		ms.types[mf.GetName()] = mf.GetType()
	}
	for _, want := range []string{"chronos_fires_total", "chronos_consumergroup_lag_sum", "process_resident_memory_bytes", "go_goroutines"} {
		require.Contains(t, ms.labels, want, "the registry is not what it should be")
	}
	return ms
}

// exists reports whether name is a series of a registered metric: the
// metric itself or a _bucket/_sum/_count series of a histogram (or summary).
func (ms metricSet) exists(name string) (metric string, ok bool) {
	if _, ok := ms.labels[name]; ok {
		return name, true
	}
	for suffix, types := range map[string][]dto.MetricType{
		"_bucket": {dto.MetricType_HISTOGRAM},
		"_sum":    {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
		"_count":  {dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY},
	} {
		if stem, ok := strings.CutSuffix(name, suffix); ok {
			if typ, known := ms.types[stem]; known && slices.Contains(types, typ) {
				return stem, true
			}
		}
	}
	return "", false
}

var (
	nameRE     = regexp.MustCompile(`\b(?:chronos|process|go)_[a-z0-9_]*[a-z0-9]\b`)
	selectorRE = regexp.MustCompile(`\b((?:chronos|process|go)_[a-z0-9_]*[a-z0-9]|up)\s*\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
)

func TestMetricsExist(t *testing.T) {
	t.Parallel()
	ms := registeredMetrics(t)
	n := topology.Names{}
	l := topology.Layout{Names: n}
	values := map[string]map[string]bool{
		"consumergroup": {string(n.SchedulerGroup()): true, string(n.ClockGroup()): true, string(n.RouterGroup()): true, string(n.HistoryGroup()): true},
		"topic": {string(n.Jobs()): true, string(n.BucketTriggers()): true, string(n.Dispatch()): true, string(n.Rejects()): true,
			string(n.Clock()): true, string(n.ShardTriggers()): true, string(n.SchedulerTable()): true,
			string(n.SchedulerLoop()): true, string(n.SchedulerBackfill()): true, string(n.ClockTable()): true, string(n.Results()): true, string(n.HistoryTable()): true,
			string(n.Calendars()): true},
		"job": {deploytest.Str(deploytest.Get(deploytest.YAMLDoc(t, "deploy/prometheus/prometheus.yml"), "scrape_configs", 0, "job_name")): true},
	}
	for _, tp := range l.Topics() {
		require.True(t, values["topic"][tp.Name], "topic %s missing from this test", tp.Name)
	}

	// Every name in the files (expressions, annotations, descriptions, the
	// deploy docs) is a registered series.
	for _, f := range []string{"deploy/prometheus/alerts.yml", "deploy/kubernetes/keda-scaledobject.yaml",
		"deploy/grafana/dashboards/chronos.json", "docs/deploy.md"} {
		names := nameRE.FindAllString(string(deploytest.ReadFile(t, f)), -1)
		require.NotEmpty(t, names, f)
		for _, name := range names {
			if _, ok := ms.exists(name); !ok {
				t.Errorf("%s: metric %s is not registered by chronos run", f, name)
			}
		}
	}

	// Label matchers of the expressions name labels the metric has, and
	// groups and topics that exist.
	for where, e := range deploytest.Expressions(t) {
		require.NotEmpty(t, strings.TrimSpace(e), where)
		require.Regexp(t, selectorRE.String()+`|`+nameRE.String(), e, "%s: %s uses no Chronos, Go or process metric", where, e)
		for _, sel := range selectorRE.FindAllStringSubmatch(e, -1) {
			metric, ok := ms.exists(sel[1])
			if sel[1] == "up" {
				metric, ok = "up", true // Prometheus's own series per target
			}
			if !ok {
				continue // reported above
			}
			allowed := append([]string{"job", "instance"}, ms.labels[metric]...)
			if metric != sel[1] {
				allowed = append(allowed, "le", "quantile")
			}
			for _, m := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
				if !slices.Contains(allowed, m[1]) {
					t.Errorf("%s: %s has no label %s (labels: %v)", where, metric, m[1], ms.labels[metric])
				}
				known := values[m[1]]
				if known == nil || m[2] == "!=" || m[2] == "!~" {
					continue
				}
				alternatives := []string{m[3]}
				if m[2] == "=~" {
					alternatives = strings.Split(m[3], "|")
				}
				for _, v := range alternatives {
					if !known[v] {
						t.Errorf("%s: %s=%q is not a Chronos %s (want one of %v)", where, m[1], v, m[1], slices.Sorted(maps.Keys(known)))
					}
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Alerts and dashboard structure

func TestAlerts(t *testing.T) {
	t.Parallel()
	doc := deploytest.YAMLDoc(t, "deploy/prometheus/alerts.yml")
	seen := map[string]bool{}
	for _, g := range deploytest.List(doc["groups"]) {
		require.NotEmpty(t, deploytest.Str(deploytest.Get(g, "name")))
		for _, r := range deploytest.List(deploytest.Get(g, "rules")) {
			name := deploytest.Str(deploytest.Get(r, "alert"))
			require.NotEmpty(t, name, "only alerting rules here")
			require.False(t, seen[name], "alert %s twice", name)
			seen[name] = true
			require.NotEmpty(t, strings.TrimSpace(deploytest.Str(deploytest.Get(r, "expr"))), name)
			if f := deploytest.Get(r, "for"); f != nil {
				_, err := time.ParseDuration(deploytest.Str(f))
				require.NoError(t, err, "%s: for", name)
			}
			require.NotEmpty(t, deploytest.Str(deploytest.Get(r, "labels", "severity")), "%s: severity", name)
			require.NotEmpty(t, deploytest.Str(deploytest.Get(r, "annotations", "summary")), "%s: summary", name)
			require.NotEmpty(t, deploytest.Str(deploytest.Get(r, "annotations", "description")), "%s: description (what to do)", name)
		}
	}
	deployDoc := string(deploytest.ReadFile(t, "docs/deploy.md"))
	for _, want := range []string{"ChronosFiresLate", "ChronosLagGrowing", "ChronosClockStalled", "ChronosRejectsRising", "ChronosLagScrapeFailing"} {
		require.True(t, seen[want], "alert %s", want)
	}
	for name := range seen {
		require.Contains(t, deployDoc, name, "docs/deploy.md explains %s", name)
	}
}

func TestDashboard(t *testing.T) {
	t.Parallel()
	var dash map[string]any
	require.NoError(t, json.Unmarshal(deploytest.ReadFile(t, "deploy/grafana/dashboards/chronos.json"), &dash))
	require.Equal(t, "chronos", dash["uid"])
	dsUID := deploytest.Str(deploytest.Get(deploytest.YAMLDoc(t, "deploy/grafana/provisioning/datasources/prometheus.yml"), "datasources", 0, "uid"))
	require.NotEmpty(t, dsUID)
	ids := map[float64]bool{}
	var all strings.Builder
	for _, p := range deploytest.List(dash["panels"]) {
		id, _ := deploytest.Get(p, "id").(float64)
		require.False(t, ids[id], "panel id %v twice", id)
		ids[id] = true
		if deploytest.Str(deploytest.Get(p, "type")) == "row" {
			continue
		}
		title := deploytest.Str(deploytest.Get(p, "title"))
		require.Equal(t, dsUID, deploytest.Str(deploytest.Get(p, "datasource", "uid")), "panel %q datasource", title)
		require.NotEmpty(t, deploytest.List(deploytest.Get(p, "targets")), "panel %q has no query", title)
		for _, tg := range deploytest.List(deploytest.Get(p, "targets")) {
			require.Equal(t, dsUID, deploytest.Str(deploytest.Get(tg, "datasource", "uid")), "panel %q target datasource", title)
			all.WriteString(deploytest.Str(deploytest.Get(tg, "expr")) + "\n")
		}
	}
	// The panels the brief promises.
	for _, m := range []string{"chronos_fires_total", "chronos_fire_delay_seconds_bucket", "chronos_consumergroup_lag_sum",
		"chronos_commands_total", "chronos_rejects_total", "chronos_missed_fires_total",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "go_goroutines"} {
		require.Contains(t, all.String(), m)
	}
}
