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
		conn      connFlags
		layout    layoutFlags
		group     string
		topic     string
		threshold int64
		policy    string
		withLag   bool
		minR      int64
		maxR      int64
	)
	cmd := &cobra.Command{
		Use:   "lag",
		Short: "Print consumer-group lag per partition and the replicas KEDA would ask for",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if minR < 0 || maxR < 0 {
				return fmt.Errorf("--min-replica-count %d, --max-replica-count %d: want 0 or more", minR, maxR)
			}
			if policy != string(lag.Earliest) && policy != string(lag.Latest) {
				return fmt.Errorf("--offset-reset-policy %q: want earliest or latest", policy)
			}
			l := layout.layout()
			if group == "" {
				group = string(l.SchedulerGroup())
			}
			var targets []lag.Target
			if topic != "" {
				targets = []lag.Target{{Group: group, Topic: topic}}
			} else {
				for _, t := range lag.Targets(l) {
					if t.Group == group {
						targets = append(targets, t)
					}
				}
				if len(targets) == 0 {
					return fmt.Errorf("--group %s is not a Chronos group; name its --topic", group)
				}
			}
			adm, closeAdm, err := conn.admin()
			if err != nil {
				return err
			}
			defer closeAdm()
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			defer cancel()
			parts, err := lag.Measure(ctx, adm, lag.Policy(policy), targets...)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tEND\tCOMMITTED\tLAG")
			var total int64
			for _, p := range parts {
				committed := fmt.Sprint(p.Committed)
				if p.Committed < 0 {
					committed = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\n", p.Group, p.Topic, p.Partition, p.End, committed, p.Lag)
				total += p.Lag
			}
			if err := w.Flush(); err != nil {
				return err
			}
			// KEDA is pinned to one topic (the scheduler's input); replicas
			// are computed from the first target's partitions.
			first := parts[:0]
			for _, p := range parts {
				if p.Topic == targets[0].Topic {
					first = append(first, p)
				}
			}
			// KEDA keeps the replica count between the ScaledObject's
			// minReplicaCount and maxReplicaCount whatever the metric says.
			metric := lag.Replicas(first, threshold, withLag)
			want := max(metric, minR)
			if maxR > 0 {
				want = min(want, max(maxR, minR))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "total lag %d; KEDA (topic %s, lagThreshold %d, minReplicaCount %d, maxReplicaCount %d) would ask for %d replicas (the lag alone: %d)\n",
				total, targets[0].Topic, threshold, minR, maxR, want, metric)
			return nil
		},
	}
	fs := cmd.Flags()
	conn.register(fs, "bootstrap brokers")
	fs.StringVar(&group, "group", "", "consumer group (default: the scheduler group)")
	fs.StringVar(&topic, "topic", "", "topic (default: every input topic of the group)")
	fs.Int64Var(&threshold, "lag-threshold", 10, "KEDA lagThreshold: target lag per replica")
	fs.StringVar(&policy, "offset-reset-policy", string(lag.Earliest), "how a partition without a commit counts: earliest (all of it) or latest (1)")
	fs.Int64Var(&minR, "min-replica-count", 1, "KEDA minReplicaCount (deploy/kubernetes sets 1)")
	fs.Int64Var(&maxR, "max-replica-count", 12, "KEDA maxReplicaCount (deploy/kubernetes sets 12; 0: no cap but the partitions)")
	fs.BoolVar(&withLag, "limit-to-partitions-with-lag", false, "cap replicas at partitions with lag, as KEDA's option does")
	layout.register(fs)
	return cmd
}
