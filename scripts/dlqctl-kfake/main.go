// Command dlqctl-kfake runs franz-go's kfake (a Kafka cluster speaking the
// Kafka wire protocol, kept in memory) as its own process, so dlqctl and its
// tests talk to it over TCP exactly as they would to a broker.
// scripts/stack.sh builds and starts it; see docs/emulators.md for what
// kfake does not model.
//
//	dlqctl-kfake serve --port 0 [--brokers 1] [--ready-file F] [--sasl METHOD:USER:PASS]
//	                   [--tls-cert F --tls-key F] [-c key=value ...]
//	dlqctl-kfake probe 127.0.0.1:PORT     exit 0 when the cluster answers Metadata
//
// serve listens on 127.0.0.1 only, creates no topic (auto-creation stays off,
// as a producer to a mistyped topic must fail, not create it), prints the
// bootstrap address ("127.0.0.1:PORT", one line per broker) on stdout and, if
// asked, writes it to --ready-file once every listener is bound. SIGTERM or
// SIGINT closes the cluster; nothing is kept on disk.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "probe":
		return probe(args[1:])
	default:
		usage()
		return 2
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: dlqctl-kfake serve [flags] | dlqctl-kfake probe HOST:PORT")
}

type kvFlag map[string]string

func (f kvFlag) String() string { return "" }
func (f kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	f[k] = v
	return nil
}

type listFlag []string

func (f *listFlag) String() string     { return strings.Join(*f, ",") }
func (f *listFlag) Set(s string) error { *f = append(*f, s); return nil }

func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	port := fs.Int("port", 0, "port of the first broker on 127.0.0.1 (0: a free port); further brokers take free ports")
	brokers := fs.Int("brokers", 1, "number of brokers in the cluster")
	partitions := fs.Int("default-partitions", 1, "partitions of a topic created without a count")
	ready := fs.String("ready-file", "", "write the bootstrap address here once listening (atomic rename)")
	logLevel := fs.String("log-level", "warn", "kfake log level: none, error, warn, info, debug")
	tlsCert := fs.String("tls-cert", "", "serve TLS with this PEM certificate (needs --tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM key of --tls-cert")
	var sasl listFlag
	fs.Var(&sasl, "sasl", "enable SASL with this superuser, METHOD:USER:PASS (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); repeatable")
	cfgs := kvFlag{}
	fs.Var(cfgs, "c", "broker config key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *brokers < 1 {
		fmt.Fprintln(os.Stderr, "dlqctl-kfake: --brokers must be at least 1")
		return 2
	}
	ports := make([]int, *brokers)
	ports[0] = *port
	opts := []kfake.Opt{
		kfake.NumBrokers(*brokers),
		kfake.Ports(ports...),
		kfake.DefaultNumPartitions(*partitions),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level(*logLevel))),
	}
	if len(cfgs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(cfgs))
	}
	if len(sasl) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, s := range sasl {
			parts := strings.SplitN(s, ":", 3)
			if len(parts) != 3 {
				fmt.Fprintln(os.Stderr, "dlqctl-kfake: --sasl wants METHOD:USER:PASS")
				return 2
			}
			opts = append(opts, kfake.Superuser(parts[0], parts[1], parts[2]))
		}
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		fmt.Fprintln(os.Stderr, "dlqctl-kfake: --tls-cert and --tls-key go together")
		return 2
	}
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dlqctl-kfake: %v\n", err)
			return 1
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-kfake: %v\n", err)
		return 1
	}
	addrs := c.ListenAddrs()
	line := strings.Join(addrs, ",")
	fmt.Println(line)
	if *ready != "" {
		tmp := *ready + ".tmp"
		if err := os.WriteFile(tmp, []byte(line+"\n"), 0o644); err == nil {
			err = os.Rename(tmp, *ready)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "dlqctl-kfake: ready file: %v\n", err)
			c.Close()
			return 1
		}
	}
	<-sigs
	c.Close()
	return 0
}

func level(s string) kfake.LogLevel {
	switch strings.ToLower(s) {
	case "debug":
		return kfake.LogLevelDebug
	case "info":
		return kfake.LogLevelInfo
	case "warn":
		return kfake.LogLevelWarn
	case "error":
		return kfake.LogLevelError
	}
	return kfake.LogLevelNone
}

// probe asks the cluster for its metadata (a real Kafka request, not a bare
// TCP connect) and exits 0 when it answers with at least one broker.
func probe(args []string) int {
	if len(args) != 1 {
		usage()
		return 2
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(args[0], ",")...),
		kgo.DialTimeout(time.Second), kgo.RequestRetries(0), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-kfake probe: %v\n", err)
		return 2
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err == nil && len(m.Brokers) == 0 {
		err = errors.New("no brokers in metadata")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-kfake probe: %v\n", err)
		return 1
	}
	return 0
}
