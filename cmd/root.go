// Package cmd holds dlqctl's commands: each turns flags into an Options
// struct, validates it, and calls a run function that uses pkg/.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/dlqctl/dlqctl/pkg/awsconf"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// version is set at build time with -ldflags "-X github.com/dlqctl/dlqctl/cmd.version=…".
var version = ""

// Version returns the program version.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Main runs dlqctl with the process's arguments and streams and returns the
// exit code. It is the only place that decides exit codes.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, output.System(), os.Args[1:])
}

// Run executes dlqctl with args on the given streams.
func Run(ctx context.Context, io *output.IOStreams, args []string) int {
	io = scrubStreams(io, args)
	f := &Factory{IO: io}
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return errs.ExitOK
	}
	code := errs.Code(err)
	if code == errs.ExitError && isCobraUsageError(err) {
		code = errs.ExitUsage
	}
	var silent *errs.Silent
	if !errors.As(err, &silent) {
		msg := err.Error()
		if code == errs.ExitInterrupted {
			msg = "interrupted"
		}
		fmt.Fprintf(io.ErrOut, "%s %s\n", io.PaintErr(output.BoldRed, "dlqctl:"), msg)
	}
	return code
}

func isCobraUsageError(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "if any flags in the group", "none of the others can be"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "dlqctl",
		Short: "Triage, redrive and archive AWS SQS dead-letter queues safely",
		Long: `dlqctl answers the four questions of a full dead-letter queue:
what is in it (queues, sample, group), why did it fail (classify), how to
replay it without a second incident (redrive), and how to get rid of what can
never succeed (archive, restore). Nothing dlqctl does deletes a message that
is not durably somewhere else.

In a new shell or account, start with 'dlqctl doctor QUEUE' (an SQS queue,
amqp://… or kafka://…): access to the broker (AWS identity and IAM
permissions; RabbitMQ login, vhost and queue; Kafka brokers, topic and
group), state directory. The documentation —
IAM policies per role, on-call runbooks — is built in: 'dlqctl help topics'.
How to name a queue on each broker: 'dlqctl help addresses'; what the exit
codes mean: 'dlqctl help exit-codes'.`,
		Version:       Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			noteDeprecatedFlags(c, f.IO.ErrOut)
			if _, err := f.Format(); err != nil {
				return err
			}
			if f.Opts.NoColor {
				f.IO.Color, f.IO.ErrColor = false, false
			}
			if err := f.bucketAccess().Validate(f.Opts.CustomS3Endpoint()); err != nil {
				return err
			}
			for _, e := range []struct{ flag, value, example string }{
				{"--endpoint-url", f.Opts.EndpointURL, "http://127.0.0.1:4566"},
				{"--sqs-endpoint-url", f.Opts.SQSEndpointURL, "https://sqs-fips.us-east-1.amazonaws.com"},
				{"--s3-endpoint-url", f.Opts.S3EndpointURL, "https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:9000"},
			} {
				if e.value == "" {
					continue
				}
				if u, err := url.Parse(e.value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return errs.BadInputf("%s %q is not an http(s) URL; pass something like %s", e.flag, e.value, e.example)
				}
			}
			if e := f.Opts.EndpointURL; e != "" && awsconf.IsAWSEndpoint(e) {
				return errs.BadInputf("--endpoint-url sets both the SQS and the S3 endpoint and is meant for local stacks; %s is an AWS endpoint: pass it as --sqs-endpoint-url or --s3-endpoint-url", e)
			}
			// Flags the references' brokers cannot honour, before
			// anything connects (refusals.go).
			return refuseBrokerFlags(c, args)
		},
	}
	root.SetVersionTemplate("dlqctl {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return errs.BadInputf("%v; see '%s --help'", err, c.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&f.Opts.Region, "region", "", "AWS region (default from AWS_REGION / profile)")
	pf.StringVar(&f.Opts.Profile, "profile", "", "AWS shared config profile")
	pf.StringVar(&f.Opts.EndpointURL, "endpoint-url", "", "endpoint of a local stack serving both SQS and S3 (not for AWS endpoints: use --sqs-endpoint-url / --s3-endpoint-url)")
	pf.StringVar(&f.Opts.SQSEndpointURL, "sqs-endpoint-url", "", "SQS endpoint only, e.g. a FIPS or VPC endpoint (AWS_ENDPOINT_URL_SQS also works)")
	pf.StringVar(&f.Opts.S3EndpointURL, "s3-endpoint-url", "", "S3 endpoint only; path-style addressing when it is not AWS's (AWS_ENDPOINT_URL_S3 also works)")
	pf.StringVarP(&f.Opts.Output, "output", "o", "table", "output format: table, json or ndjson")
	pf.BoolVar(&f.Opts.NoColor, "no-color", false, "no colour on a terminal (also NO_COLOR=1 or TERM=dumb; never coloured when piped)")
	pf.BoolVar(&f.Opts.Yes, "yes", false, "do not ask for confirmation (scripts)")
	pf.StringVar(&f.Opts.StateDir, "state-dir", "", "where run journals and the hold ledger live (default $DLQCTL_STATE_DIR, else $XDG_STATE_HOME/dlqctl)")
	pf.BoolVarP(&f.Opts.Verbose, "verbose", "v", false, "print resolved queues, endpoints and API details to stderr (never credentials or receipt handles)")
	pf.BoolVar(&f.Opts.PathStyle, "s3-path-style", false, "use path-style S3 addressing (automatic with a non-AWS S3 endpoint)")
	pf.StringVar(&f.Opts.BucketOwner, "bucket-owner", "", "12-digit account id that must own the S3 bucket; S3 refuses every call to a bucket owned by anyone else (ExpectedBucketOwner)")
	pf.BoolVar(&f.Opts.RequesterPays, "requester-pays", false, "accept the request charges of a requester-pays S3 bucket")
	addAMQPFlags(pf, &f.AMQP)
	addKafkaFlags(pf, &f.Kafka)

	root.SetHelpCommand(newHelpCmd(root))
	// Every command, added here explicitly (no init() registration).
	root.AddCommand(
		NewCmdQueues(f, nil),
		NewCmdSample(f, nil),
		NewCmdGroup(f, nil),
		NewCmdClassify(f, nil),
		NewCmdRedrive(f, nil),
		NewCmdArchive(f, nil),
		NewCmdRestore(f, nil),
		NewCmdRuns(f, nil),
		NewCmdAudit(f, nil),
		NewCmdCheck(f, nil),
		NewCmdWatch(f, nil),
		NewCmdDoctor(f, nil),
		NewCmdUI(f, nil),
	)
	root.AddCommand(helpTopics(inspect.ExprHelp)...)
	documentPipedColumns(root)
	annotateBrokerFlags(root)
	installHelp(root)
	installCompletion(root, f)
	return root
}

// withExitCodes was the exit code table appended to a command's long
// help; the table is now one topic, 'dlqctl help exit-codes', and every
// command's help ends with a one-line summary pointing to it
// (help_layout.go, internal/helptext).
func withExitCodes(long string) string { return strings.TrimSpace(long) }

// exactArgs is cobra.ExactArgs with a usage-class error naming what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return errs.BadInputf("%s expects %s (got %d argument(s)); see 'dlqctl %s --help'", c.Name(), what, len(args), c.Name())
		}
		return nil
	}
}
