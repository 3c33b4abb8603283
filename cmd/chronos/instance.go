package main

import (
	"context"
	"log/slog"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chronos-scheduler/chronos/clients"
	"github.com/chronos-scheduler/chronos/instance"
	"github.com/chronos-scheduler/chronos/topology"
)

// instanceFlags are the flags of an instance (dev, run, bench), bound by
// instance.Config.RegisterFlags: the one mapping of flags to the
// configuration.
type instanceFlags struct{ cfg instance.Config }

// register binds the flags with the command's defaults of --http-addr and
// --data-dir.
func (f *instanceFlags) register(fs *pflag.FlagSet, httpDefault, dataDirDefault string) {
	f.cfg = instance.Default()
	f.cfg.HTTP.Addr, f.cfg.DataDir = httpDefault, dataDirDefault
	f.cfg.RegisterFlags(fs)
}

// config returns the instance configuration on brokers, with the test
// clock hook and log as the logger.
func (f *instanceFlags) config(brokers []string, log *slog.Logger) (instance.Config, error) {
	cfg := f.cfg
	cfg.Kafka.Brokers = brokers
	now, err := testClock(log)
	if err != nil {
		return instance.Config{}, err
	}
	cfg.Now, cfg.Logger = now, log
	return cfg, nil
}

// serve runs an instance of cfg until ctx ends; embeddedBroker says that
// the process hosts the embedded broker (chronos dev), whose log shares the
// heap (paceBase).
func serve(ctx context.Context, cfg instance.Config, embeddedBroker bool) error {
	if set, cgroup := autoMemoryLimit("/"); set > 0 && cfg.Logger != nil {
		cfg.Logger.Info("GOMEMLIMIT not set: Go's soft memory limit set to 90% of the cgroup's memory limit",
			"limit_bytes", set, "cgroup_limit_bytes", cgroup)
	}
	defer paceGC(ctx, cfg.Logger, embeddedBroker)()
	inst, err := instance.New(ctx, cfg)
	if err != nil {
		return err
	}
	return inst.Run(ctx)
}

// connFlags are the connection flags of the tools: brokers plus security.
type connFlags struct{ cfg clients.Config }

// layoutFlags are the topic flags of the tools, the same as an instance's.
type layoutFlags struct{ l topology.Layout }

// register adds --brokers (usage: its help text) and the security flags.
func (c *connFlags) register(fs *pflag.FlagSet, usage string) {
	c.cfg = clients.Default("127.0.0.1:9092")
	fs.StringSliceVar(&c.cfg.Brokers, "brokers", c.cfg.Brokers, usage)
	c.cfg.RegisterSecurityFlags(fs)
}

// config returns the validated client configuration of a tool.
func (c *connFlags) config() (clients.Config, error) {
	cfg := c.cfg
	if err := cfg.Validate(); err != nil {
		return clients.Config{}, err
	}
	return cfg, nil
}

// admin returns an admin client for the connection settings and the func
// that closes it.
func (c *connFlags) admin() (*kadm.Client, func(), error) {
	kafka, err := c.config()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kafka.NewKgo()
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func (l *layoutFlags) register(fs *pflag.FlagSet) {
	l.l = instance.Default().Layout
	instance.RegisterLayoutFlags(fs, &l.l)
}

func (l *layoutFlags) layout() topology.Layout { return l.l }
