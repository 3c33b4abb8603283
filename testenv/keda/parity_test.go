package keda

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chronos-scheduler/chronos/lag"
	"github.com/chronos-scheduler/chronos/testenv"
)

// chronosBin is `chronos` built from this checkout (TestMain).
var chronosBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "keda-parity-")
	if err != nil {
		panic(err)
	}
	chronosBin = filepath.Join(dir, "chronos")
	build := exec.Command("go", "build", "-o", chronosBin, "./cmd/chronos")
	build.Dir = filepath.Join("..", "..")
	// The main module's build uses the caches the rest of CI warms, not
	// this module's (.ci/run points GOCACHE and GOMODCACHE at KEDA's).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCACHE=") && !strings.HasPrefix(kv, "GOMODCACHE=") {
			build.Env = append(build.Env, kv)
		}
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building chronos:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// setup is one case's broker state: a topic with per-partition record
// counts, a group's commits (absent: no commit), records deleted from the
// front of partitions (what retention does).
type setup struct {
	name     string
	produced []int           // records per partition
	commits  map[int32]int64 // group's committed offsets
	deleted  map[int32]int64 // delete records before this offset
	md       map[string]string
	// want, when set: the replica count KEDA's metric alone asks for (the
	// edge case the issue names; asserted on top of the parity).
	want int64
}

// fixture puts s on the broker under unique names and returns its trigger.
func fixture(t *testing.T, env *testenv.Env, adm *kadm.Client, s setup) lag.KafkaTrigger {
	t.Helper()
	ctx := context.Background()
	topic := fmt.Sprintf("%sparity-%s", env.Layout.Prefix, s.name)
	group := topic + "-group"
	_, err := adm.CreateTopic(ctx, int32(len(s.produced)), 1, nil, topic)
	require.NoError(t, err)
	var recs []*kgo.Record
	for p, n := range s.produced {
		for range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("x")})
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Kafka.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	if len(s.deleted) > 0 {
		res, err := adm.DeleteRecords(ctx, offsets(topic, s.deleted))
		require.NoError(t, err)
		require.NoError(t, res.Error())
	}
	if s.commits != nil {
		res, err := adm.CommitOffsets(ctx, group, offsets(topic, s.commits))
		require.NoError(t, err)
		require.NoError(t, res.Error())
	}
	md := map[string]string{"bootstrapServers": strings.Join(env.Kafka.Brokers, ","), "consumerGroup": group, "topic": topic}
	for k, v := range s.md {
		md[k] = v
	}
	tr, err := lag.ParseKafkaTrigger(md)
	require.NoError(t, err)
	return tr
}

func offsets(topic string, at map[int32]int64) kadm.Offsets {
	o := kadm.Offsets{}
	for p, a := range at {
		o.Add(kadm.Offset{Topic: topic, Partition: p, At: a})
	}
	return o
}

// metadata is tr as trigger metadata, plus extra keys.
func metadata(brokers []string, tr lag.KafkaTrigger, extra map[string]string) map[string]string {
	md := map[string]string{
		"bootstrapServers":       strings.Join(brokers, ","),
		"consumerGroup":          tr.Group,
		"topic":                  tr.Topic,
		"lagThreshold":           fmt.Sprint(tr.LagThreshold),
		"activationLagThreshold": fmt.Sprint(tr.ActivationLagThreshold),
		"offsetResetPolicy":      string(tr.Policy),
	}
	if tr.LimitToPartitionsWithLag {
		md["limitToPartitionsWithLag"] = "true"
	}
	if tr.AllowIdleConsumers {
		md["allowIdleConsumers"] = "true"
	}
	for k, v := range extra {
		md[k] = v
	}
	return md
}

// keda runs KEDA's Kafka scaler once on md: its metric and activity.
func keda(t *testing.T, md map[string]string) (int64, bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := scalers.NewKafkaScaler(ctx, &scalersconfig.ScalerConfig{TriggerType: "kafka", TriggerMetadata: md,
		GlobalHTTPTimeout: 10 * time.Second, ScalableObjectName: "parity", ScalableObjectNamespace: "test"})
	require.NoError(t, err)
	defer func() { _ = s.Close(ctx) }()
	name := s.GetMetricSpecForScaling(ctx)[0].External.Metric.Name
	ms, active, err := s.GetMetricsAndActivity(ctx, name)
	if err != nil {
		return 0, false, err
	}
	require.Len(t, ms, 1)
	milli := ms[0].Value.MilliValue()
	require.Zero(t, milli%1000, "KEDA's metric is a whole lag")
	return milli / 1000, active, nil
}

// cli runs `chronos lag` on tr: the LAG column by partition, KEDA's metric
// and the replicas the trigger alone asks for.
func cli(t *testing.T, brokers []string, tr lag.KafkaTrigger) (map[int32]int64, int64, int64) {
	t.Helper()
	args := []string{"lag", "--brokers", strings.Join(brokers, ","), "--group", tr.Group, "--topic", tr.Topic,
		"--lag-threshold", fmt.Sprint(tr.LagThreshold), "--activation-lag-threshold", fmt.Sprint(tr.ActivationLagThreshold),
		"--offset-reset-policy", string(tr.Policy), "--max-replica-count", "0"}
	if tr.LimitToPartitionsWithLag {
		args = append(args, "--limit-to-partitions-with-lag")
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(chronosBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), errOut.String())
	parts := map[int32]int64{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && f[0] == tr.Group && f[1] == tr.Topic {
			p, err := strconv.Atoi(f[2])
			require.NoError(t, err)
			parts[int32(p)], err = strconv.ParseInt(f[6], 10, 64)
			require.NoError(t, err)
		}
	}
	m := regexp.MustCompile(`KEDA metric (-?\d+) .*\n.*\(the largest trigger alone: (-?\d+)\)`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	metric, _ := strconv.ParseInt(m[1], 10, 64)
	alone, _ := strconv.ParseInt(m[2], 10, 64)
	return parts, metric, alone
}

// collected is what the /metrics collector exports for tr: lag by partition.
func collected(t *testing.T, adm *kadm.Client, tr lag.KafkaTrigger) map[int32]int64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&lag.Collector{Admin: adm, Policy: tr.Policy, Targets: []lag.Target{{Group: tr.Group, Topic: tr.Topic}}})
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[int32]int64{}
	for _, mf := range mfs {
		if mf.GetName() != "chronos_consumergroup_lag" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "partition" {
					p, err := strconv.Atoi(l.GetValue())
					require.NoError(t, err)
					out[int32(p)] = int64(m.GetGauge().GetValue())
				}
			}
		}
	}
	return out
}

// check asserts that KEDA, lag.Measure, the collector and `chronos lag`
// agree on tr: every partition's lag, the total, the metric, the activity
// and the replica count. It returns the replica count KEDA's metric alone
// asks for.
func check(t *testing.T, env *testenv.Env, adm *kadm.Client, tr lag.KafkaTrigger) int64 {
	t.Helper()
	brokers := env.Kafka.Brokers
	parts, err := lag.Measure(context.Background(), adm, lag.Earliest, tr.Target())
	require.NoError(t, err)
	metric, active := tr.Metric(parts)

	kMetric, kActive, err := keda(t, metadata(brokers, tr, nil))
	require.NoError(t, err)
	require.Equal(t, kMetric, metric, "KEDA's metric (total lag, capped)")
	require.Equal(t, kActive, active, "activity")

	// Per partition: KEDA limited to one partition, with a threshold too
	// large for its cap; its metric then is that partition's lag (a
	// negative one reported as 0).
	byCollector := collected(t, adm, tr)
	byCLI, cliMetric, cliAlone := cli(t, brokers, tr)
	var total int64
	for _, p := range parts {
		one := tr
		one.LagThreshold, one.LimitToPartitionsWithLag, one.AllowIdleConsumers = 1<<50, false, false
		kLag, _, err := keda(t, metadata(brokers, one, map[string]string{"partitionLimitation": fmt.Sprint(p.Partition)}))
		require.NoError(t, err)
		require.Equal(t, kLag, max(p.Lag, 0), "partition %d", p.Partition)
		require.Equal(t, p.Lag, byCollector[p.Partition], "collector, partition %d", p.Partition)
		require.Equal(t, p.Lag, byCLI[p.Partition], "chronos lag, partition %d", p.Partition)
		total += p.Lag
	}
	require.Len(t, byCollector, len(parts))
	require.Len(t, byCLI, len(parts))
	require.Equal(t, lag.Sum(parts), total)
	// KEDA's metric is the total whenever it is not capped and not negative.
	if !tr.LimitToPartitionsWithLag && (tr.AllowIdleConsumers || total/tr.LagThreshold <= int64(len(parts))) {
		require.Equal(t, max(total, 0), kMetric)
	}

	kReplicas := lag.Proposal(float64(kMetric), float64(tr.LagThreshold), 0)
	if !tr.AllowIdleConsumers { // chronos lag has no such flag: the manifests never set it
		require.Equal(t, kMetric, cliMetric, "chronos lag prints KEDA's metric")
		require.Equal(t, kReplicas, cliAlone, "chronos lag: the replicas the trigger alone asks for")
	}
	so := lag.ScaledObject{MinReplicas: 1, Triggers: []lag.KafkaTrigger{tr}}
	n, _ := so.Replicas(parts, 0)
	require.Equal(t, max(kReplicas, 1), n)
	return kReplicas
}

// TestParityWithKEDA runs KEDA's Kafka scaler and Chronos's lag (lag.Measure,
// the /metrics collector, the `chronos lag` binary) against the same broker
// on the cases the issue names, then on seeded random ones.
func TestParityWithKEDA(t *testing.T) {
	env := testenv.New(t, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Kafka.Brokers...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	twelve := func(n int) []int {
		out := make([]int, 12)
		for i := range out {
			out[i] = n
		}
		return out
	}
	all := func(n int, at int64) map[int32]int64 {
		out := map[int32]int64{}
		for p := range n {
			out[int32(p)] = at
		}
		return out
	}
	earliest100 := map[string]string{"lagThreshold": "100", "activationLagThreshold": "10", "offsetResetPolicy": "earliest"}
	cases := []setup{
		{name: "zero", produced: twelve(10), commits: all(12, 10), md: earliest100, want: 0},
		{name: "medium", produced: twelve(50), commits: all(12, 20), md: earliest100, want: 4},
		{name: "high", produced: twelve(500), commits: all(12, 0), md: earliest100, want: 12},
		// 1,250 on 12 partitions: 1250/100 = 12 is not above 12, so KEDA
		// does not cap, and asks for 13.
		{name: "intdiv", produced: twelve(105), commits: map[int32]int64{0: 10, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, 9: 0, 10: 0, 11: 0},
			md: earliest100, want: 13},
		// A commit past the end: 50 + 60 - 30 = 80, 2 replicas at 50 (not
		// 110 and 3, as clamping the partition would give).
		{name: "pastend", produced: []int{50, 60, 10}, commits: map[int32]int64{0: 0, 1: 0, 2: 40},
			md: map[string]string{"lagThreshold": "50", "offsetResetPolicy": "earliest"}, want: 2},
		// No commit after retention: the records left, 550 - 120 = 430
		// (KEDA 2.16 and 2.20 counted 550 and asked for 11).
		{name: "retention", produced: []int{200, 200, 150}, commits: map[int32]int64{1: 0}, deleted: map[int32]int64{0: 70, 2: 50},
			md: map[string]string{"lagThreshold": "50", "offsetResetPolicy": "earliest", "allowIdleConsumers": "true"}, want: 9},
		{name: "latest", produced: []int{30, 30, 30}, commits: map[int32]int64{0: 10},
			md: map[string]string{"lagThreshold": "10", "offsetResetPolicy": "latest"}, want: 3},
		{name: "withlag", produced: []int{300, 0, 0, 0}, commits: all(4, 0),
			md: map[string]string{"lagThreshold": "10", "offsetResetPolicy": "earliest", "limitToPartitionsWithLag": "true"}, want: 1},
		{name: "idle", produced: []int{300, 0}, commits: all(2, 0),
			md: map[string]string{"lagThreshold": "10", "offsetResetPolicy": "earliest", "allowIdleConsumers": "true"}, want: 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := fixture(t, env, adm, c)
			require.Equal(t, c.want, check(t, env, adm, tr))
		})
	}

	// A group that never committed: Apache Kafka answers "no offset" and
	// KEDA counts by the policy, as Chronos does; the embedded broker
	// answers "group id does not exist" and KEDA reports an error.
	t.Run("nevercommitted", func(t *testing.T) {
		tr := fixture(t, env, adm, setup{name: "never", produced: []int{40, 20}, md: earliest100})
		if env.Broker == nil {
			require.Equal(t, int64(1), check(t, env, adm, tr))
			return
		}
		_, _, err := keda(t, metadata(env.Kafka.Brokers, tr, nil))
		require.ErrorContains(t, err, "does not exist")
		parts, err := lag.Measure(context.Background(), adm, lag.Earliest, tr.Target())
		require.NoError(t, err)
		require.Equal(t, int64(60), lag.Sum(parts))
	})

	// Seeded random states: produce, delete, commit (behind, at, past the
	// end, or not at all), random trigger options.
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 19))
	for i := range 8 {
		n := 1 + rng.IntN(6)
		s := setup{name: fmt.Sprintf("random%d", i), produced: make([]int, n), commits: map[int32]int64{}, deleted: map[int32]int64{},
			md: map[string]string{"lagThreshold": fmt.Sprint(1 + rng.IntN(60)), "activationLagThreshold": fmt.Sprint(rng.IntN(50))}}
		s.md["offsetResetPolicy"] = []string{"earliest", "latest"}[rng.IntN(2)]
		switch rng.IntN(3) {
		case 1:
			s.md["limitToPartitionsWithLag"] = "true"
		case 2:
			s.md["allowIdleConsumers"] = "true"
		}
		committedAny := false
		for p := range n {
			s.produced[p] = rng.IntN(120)
			if d := rng.IntN(3); d == 0 && s.produced[p] > 0 {
				s.deleted[int32(p)] = int64(rng.IntN(s.produced[p] + 1))
			}
			switch rng.IntN(4) {
			case 0: // no commit
			case 1:
				s.commits[int32(p)], committedAny = int64(s.produced[p]+1+rng.IntN(40)), true // past the end
			default:
				s.commits[int32(p)], committedAny = int64(rng.IntN(s.produced[p]+1)), true
			}
		}
		if !committedAny {
			s.commits[0] = 0 // a group that exists (see nevercommitted)
		}
		t.Run(s.name, func(t *testing.T) {
			tr := fixture(t, env, adm, s)
			t.Logf("%+v -> %+v", s, tr)
			check(t, env, adm, tr)
		})
	}
}
