package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-scheduler/chronos/lag"
)

func newLag() *cobra.Command {
	var (
		conn       connFlags
		layout     layoutFlags
		group      string
		topic      string
		threshold  int64
		activation int64
		policy     string
		withLag    bool
		minR       int64
		maxR       int64
		current    int64
		lateness   float64
		fireRate   float64
		resolution time.Duration
	)
	cmd := &cobra.Command{
		Use:   "lag",
		Short: "Print consumer-group lag per partition and the replicas KEDA would ask for",
		Long: "Without --topic: the triggers of the shipped ScaledObject for --partitions (deploy/kubernetes/keda-scaledobject.yaml:\n" +
			"commands on chronos-jobs, and with --lateness and --fire-rate the fan-out lateness and load triggers), each\n" +
			"trigger's metric and proposal, and the largest, as KEDA and the HPA combine them; the lag of the fan-out's inputs\n" +
			"(chronos-shard-triggers, chronos-scheduler-loop), of backfill steps (chronos-scheduler-backfill) and of the history\n" +
			"group is listed too (no trigger watches them: their lag is not fires being late). --lateness is what the lateness trigger's query returns (max(chronos_fanout_lateness_seconds), from\n" +
			"Prometheus or the largest value on the pods' /metrics). With --topic: one trigger with the --lag-threshold,\n" +
			"--activation-lag-threshold and --offset-reset-policy given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if minR < 0 || maxR < -1 || current < 0 {
				return fmt.Errorf("--min-replica-count %d, --max-replica-count %d, --current-replicas %d: want 0 or more (-1: the partition count for --max-replica-count)", minR, maxR, current)
			}
			if lateness < 0 || fireRate < 0 {
				return fmt.Errorf("--lateness %g, --fire-rate %g: want 0 or more", lateness, fireRate)
			}
			if resolution < 10*time.Millisecond || resolution > time.Minute {
				return fmt.Errorf("--resolution %s: want 10ms to 1m (the pods' --resolution)", resolution)
			}
			observed := cmd.Flags().Changed("lateness") || cmd.Flags().Changed("fire-rate")
			l := layout.layout()
			so := lag.ScaledObjectAt(l, resolution)
			if maxR == -1 {
				maxR = so.MaxReplicas
			}
			if topic != "" {
				if group == "" {
					group = string(l.SchedulerGroup())
				}
				tr := lag.KafkaTrigger{Group: group, Topic: topic, LagThreshold: threshold, ActivationLagThreshold: activation,
					Policy: lag.Policy(policy), LimitToPartitionsWithLag: withLag}
				if err := tr.Validate(); err != nil {
					return err
				}
				if observed {
					return fmt.Errorf("--lateness and --fire-rate need the shipped triggers (no --topic)")
				}
				so.Triggers, so.Lateness, so.FireRate = []lag.KafkaTrigger{tr}, nil, nil
			} else {
				for _, f := range []string{"group", "lag-threshold", "activation-lag-threshold", "offset-reset-policy", "limit-to-partitions-with-lag"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s needs --topic (without it the shipped ScaledObject's triggers are used)", f)
					}
				}
			}
			so.MinReplicas, so.MaxReplicas = minR, maxR
			adm, closeAdm, err := conn.admin()
			if err != nil {
				return err
			}
			defer closeAdm()
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			defer cancel()
			parts, err := lag.Measure(ctx, adm, lag.Earliest, so.Targets()...)
			if err != nil {
				return err
			}
			shown := parts
			var unmeasured []string
			if topic == "" { // and the fan-out inputs', backfill steps' and history group's, which no trigger watches
				for _, u := range []struct {
					what    string
					targets []lag.Target
				}{
					{"fan-out inputs (" + string(l.ShardTriggers()) + ", " + string(l.SchedulerLoop()) + ")", lag.FanoutTargets(l)},
					{"backfill steps (" + string(l.SchedulerBackfill()) + ")", []lag.Target{lag.BackfillTarget(l)}},
					{"history group " + string(l.HistoryGroup()), lag.HistoryTargets(l)},
				} {
					more, err := lag.Measure(ctx, adm, lag.Earliest, u.targets...)
					if err != nil {
						unmeasured = append(unmeasured, fmt.Sprintf("%s: lag not measured: %v", u.what, err))
						continue
					}
					shown = append(shown[:len(shown):len(shown)], more...)
				}
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tSTART\tEND\tCOMMITTED\tLAG")
			for _, p := range shown {
				committed := fmt.Sprint(p.Committed)
				if p.Committed < 0 {
					committed = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%d\n", p.Group, p.Topic, p.Partition, p.Start, p.End, committed, p.Lag)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			for _, u := range unmeasured {
				fmt.Fprintln(cmd.OutOrStdout(), u)
			}
			want, verdicts := so.Replicas(parts, current)
			if observed {
				want, _ = so.ReplicasWith(parts, lag.Observed{Lateness: lateness, FireRate: fireRate}, current)
			}
			largest := int64(0)
			for i, v := range verdicts {
				fmt.Fprintf(cmd.OutOrStdout(), "trigger %d, topic %s: lag %d, KEDA metric %d (lagThreshold %d), active %t (activationLagThreshold %d): %d replicas\n",
					i, v.Trigger.Topic, v.Lag, v.Metric, v.Trigger.LagThreshold, v.Active, v.Trigger.ActivationLagThreshold, v.Replicas)
				if i == 0 || v.Replicas > largest {
					largest = v.Replicas
				}
			}
			i := len(verdicts)
			for _, p := range []struct {
				tr   *lag.PrometheusTrigger
				flag string
				v    float64
			}{{so.Lateness, "lateness", lateness}, {so.FireRate, "fire-rate", fireRate}} {
				if p.tr == nil {
					continue
				}
				if !observed {
					fmt.Fprintf(cmd.OutOrStdout(), "trigger %d, prometheus %s: not evaluated (give its value with --%s)\n", i, p.tr.Query, p.flag)
				} else {
					n, active := p.tr.Replicas(p.v, current)
					fmt.Fprintf(cmd.OutOrStdout(), "trigger %d, prometheus %s: %g (threshold %g), active %t: %d replicas\n", i, p.tr.Query, p.v, p.tr.Threshold, active, n)
					largest = max(largest, n)
				}
				i++
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KEDA (minReplicaCount %d, maxReplicaCount %d, current %d) would ask for %d replicas (the largest trigger alone: %d)\n",
				minR, maxR, current, want, largest)
			return nil
		},
	}
	fs := cmd.Flags()
	conn.register(fs, "bootstrap brokers")
	fs.StringVar(&group, "group", "", "consumer group of --topic (default: the scheduler group)")
	fs.StringVar(&topic, "topic", "", "one topic to evaluate as a single trigger (default: the shipped ScaledObject's triggers)")
	fs.Int64Var(&threshold, "lag-threshold", 10, "with --topic: KEDA lagThreshold, the target lag per replica")
	fs.Int64Var(&activation, "activation-lag-threshold", 0, "with --topic: KEDA activationLagThreshold (decides only between 0 and 1 replicas)")
	fs.StringVar(&policy, "offset-reset-policy", string(lag.Earliest), "with --topic: how a partition without a commit counts: earliest (the records still in it) or latest (1)")
	fs.Int64Var(&minR, "min-replica-count", 1, "KEDA minReplicaCount (deploy/kubernetes sets 1)")
	fs.Int64Var(&maxR, "max-replica-count", -1, "KEDA maxReplicaCount (-1: --partitions, as deploy/kubernetes sets for 12; 0: no cap but KEDA's partition cap)")
	fs.Float64Var(&lateness, "lateness", 0, "seconds the lateness trigger's query returns (max(chronos_fanout_lateness_seconds)); with neither it nor --fire-rate the prometheus triggers are left out")
	fs.Float64Var(&fireRate, "fire-rate", 0, "fires per second the load trigger's query returns (sum(rate(chronos_fires_total[2m])))")
	fs.DurationVar(&resolution, "resolution", time.Second, "the pods' --resolution: the lateness threshold is max(5s, 2 x it)")
	fs.Int64Var(&current, "current-replicas", 0, "replicas running now, for the HPA's 10% tolerance (0: unknown, no tolerance)")
	fs.BoolVar(&withLag, "limit-to-partitions-with-lag", false, "with --topic: cap replicas at partitions with lag, as KEDA's option does")
	layout.register(fs)
	return cmd
}
