package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newTopics() *cobra.Command {
	var (
		conn   connFlags
		layout layoutFlags
		create bool
	)
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List the topics Chronos uses; with --create, create the missing ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := layout.layout()
			if err := l.Validate(); err != nil {
				return err
			}
			if create {
				adm, closeAdm, err := conn.admin()
				if err != nil {
					return err
				}
				defer closeAdm()
				ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
				defer cancel()
				if err := l.Ensure(ctx, adm); err != nil {
					return err
				}
			}
			fmt.Fprint(cmd.OutOrStdout(), l.String())
			return nil
		},
	}
	conn.register(cmd.Flags(), "bootstrap brokers (with --create)")
	cmd.Flags().BoolVar(&create, "create", false, "create missing topics")
	layout.register(cmd.Flags())
	return cmd
}
