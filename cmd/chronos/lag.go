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
	)
	cmd := &cobra.Command{
		Use:   "lag",
		Short: "Print consumer-group lag per partition and the replicas KEDA would ask for",
		Long: "Without --topic: the triggers of the shipped ScaledObject (deploy/kubernetes/keda-scaledobject.yaml:\n" +
			"commands on chronos-jobs, the fan-out on chronos-shard-triggers and the loopback), each trigger's\n" +
			"metric and proposal, and the largest, as KEDA and the HPA combine them. With --topic: one trigger\n" +
			"with the --lag-threshold, --activation-lag-threshold and --offset-reset-policy given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if minR < 0 || maxR < 0 || current < 0 {
				return fmt.Errorf("--min-replica-count %d, --max-replica-count %d, --current-replicas %d: want 0 or more", minR, maxR, current)
			}
			l := layout.layout()
			so := lag.ScaledObjectFor(l)
			if topic != "" {
				if group == "" {
					group = string(l.SchedulerGroup())
				}
				tr := lag.KafkaTrigger{Group: group, Topic: topic, LagThreshold: threshold, ActivationLagThreshold: activation,
					Policy: lag.Policy(policy), LimitToPartitionsWithLag: withLag}
				if err := tr.Validate(); err != nil {
					return err
				}
				so.Triggers = []lag.KafkaTrigger{tr}
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
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tSTART\tEND\tCOMMITTED\tLAG")
			for _, p := range parts {
				committed := fmt.Sprint(p.Committed)
				if p.Committed < 0 {
					committed = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%d\n", p.Group, p.Topic, p.Partition, p.Start, p.End, committed, p.Lag)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			want, verdicts := so.Replicas(parts, current)
			largest := int64(0)
			for i, v := range verdicts {
				fmt.Fprintf(cmd.OutOrStdout(), "trigger %d, topic %s: lag %d, KEDA metric %d (lagThreshold %d), active %t (activationLagThreshold %d): %d replicas\n",
					i, v.Trigger.Topic, v.Lag, v.Metric, v.Trigger.LagThreshold, v.Active, v.Trigger.ActivationLagThreshold, v.Replicas)
				if i == 0 || v.Replicas > largest {
					largest = v.Replicas
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KEDA (minReplicaCount %d, maxReplicaCount %d, current %d) would ask for %d replicas (the largest trigger alone: %d)\n",
				minR, maxR, current, want, largest)
			return nil
		},
	}
	fs := cmd.Flags()
	conn.register(fs, "bootstrap brokers")
	fs.StringVar(&group, "group", "", "consumer group of --topic (default: the scheduler group)")
	fs.StringVar(&topic, "topic", "", "one topic to evaluate as a single trigger (default: the shipped ScaledObject's three triggers)")
	fs.Int64Var(&threshold, "lag-threshold", 10, "with --topic: KEDA lagThreshold, the target lag per replica")
	fs.Int64Var(&activation, "activation-lag-threshold", 0, "with --topic: KEDA activationLagThreshold (decides only between 0 and 1 replicas)")
	fs.StringVar(&policy, "offset-reset-policy", string(lag.Earliest), "with --topic: how a partition without a commit counts: earliest (the records still in it) or latest (1)")
	fs.Int64Var(&minR, "min-replica-count", 1, "KEDA minReplicaCount (deploy/kubernetes sets 1)")
	fs.Int64Var(&maxR, "max-replica-count", 12, "KEDA maxReplicaCount (deploy/kubernetes sets 12; 0: no cap but the partitions)")
	fs.Int64Var(&current, "current-replicas", 0, "replicas running now, for the HPA's 10% tolerance (0: unknown, no tolerance)")
	fs.BoolVar(&withLag, "limit-to-partitions-with-lag", false, "with --topic: cap replicas at partitions with lag, as KEDA's option does")
	layout.register(fs)
	return cmd
}
