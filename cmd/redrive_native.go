package cmd

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/output"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/report"
)

// redrive --engine native, redrive status and redrive cancel: the broker
// moves the whole DLQ itself (broker.NativeMover: SQS message move tasks).

// moveNative lets the broker move the whole DLQ (redrive.Native.Move,
// once confirmed) and prints its task.
func (s *redriveSession) moveNative(ctx context.Context) error {
	f := s.f
	format, _ := f.Format()
	prog := output.NewProgress(f.IO, format)
	task, err := s.native.Move(ctx, func(prompt, refusal string) error {
		return confirm(f, prompt, refusal, "redrive not confirmed; nothing was changed")
	}, func(t broker.NativeTask, since time.Duration) {
		prog.Update(output.Stats{Op: "redrive (native)", Done: t.Moved, Total: t.ToMove, Target: float64(t.Rate), Elapsed: since.Seconds()}, false)
	})
	prog.Done()
	if task != nil {
		report.NativeTask(f.IO, prog, format, task)
	}
	if errors.Is(err, context.Canceled) {
		f.IO.Infof("interrupted: the move task was cancelled")
	}
	return err
}

// openNativeMover opens the DLQ whose broker moves it itself; one that
// cannot is refused before anything connects, in the sentence generated
// from broker.NeedNativeMove (what names the command or flag, instead the
// way out). The flags given (nil for status and cancel) are refused
// against the resolved queue's capabilities.
func openNativeMover(ctx context.Context, f *Factory, ref broker.Ref, what, instead string, flags *pflag.FlagSet) (broker.Endpoint, broker.NativeMover, error) {
	if caps, ok := capsOf(ref.Broker); ok && !caps.NativeMove {
		return nil, nil, broker.NeedNativeMove.Refusal(what, caps, haveLabels(broker.NeedNativeMove), instead)
	}
	ep, err := f.EndpointOf(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	caps := ep.Capabilities()
	if flags != nil {
		if err := refuseFlags(caps, flags, true); err != nil {
			broker.CloseEndpoint(ep)
			return nil, nil, err
		}
	}
	m, ok := ep.(broker.NativeMover)
	if !ok {
		broker.CloseEndpoint(ep)
		return nil, nil, broker.NeedNativeMove.Refusal(what, caps, haveLabels(broker.NeedNativeMove), instead)
	}
	return ep, m, nil
}

// nativeRates refuses, before anything connects, a --rate or --ramp step
// the broker's own move cannot take (Capabilities.MaxNativeRate of the
// DLQ's broker).
func nativeRates(o *RedriveOptions) error {
	// A bad reference, or a broker without its own move, is refused
	// elsewhere (refusals.go).
	if ref, err := broker.ParseRef(o.DLQ); err == nil {
		if caps, ok := capsOf(ref.Broker); ok && caps.NativeMove {
			return redrive.NativeRates(caps.MaxNativeRate, o.Rate, o.Ramp)
		}
	}
	return nil
}

// newCmdNativeTask builds redrive status and cancel: run opens the DLQ's
// native mover (instead is the way out when its broker has none).
func newCmdNativeTask(f *Factory, use, short, long, instead string, run func(ctx context.Context, ep broker.Endpoint, m broker.NativeMover, format output.Format) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: withExitCodes(long),
		Args: exactArgs(1, "one DLQ (name, URL or ARN)"),
		RunE: func(c *cobra.Command, args []string) error {
			ref, err := checkRef(args[0])
			if err != nil {
				return err
			}
			ep, mover, err := openNativeMover(c.Context(), f, ref, commandName(c), instead, nil)
			if err != nil {
				return err
			}
			defer broker.CloseEndpoint(ep)
			format, _ := f.Format()
			return run(c.Context(), ep, mover, format)
		},
	}
}

func newCmdRedriveStatus(f *Factory) *cobra.Command {
	return newCmdNativeTask(f, "status DLQ", "Show the DLQ's native move tasks (StartMessageMoveTask)",
		`List the SQS move tasks of a DLQ (SQS keeps the last ten): status, messages moved and to move, rate and destination.`,
		"'dlqctl redrive DLQ --dry-run' shows what is waiting", func(ctx context.Context, ep broker.Endpoint, m broker.NativeMover, format output.Format) error {
			tasks, err := m.NativeTasks(ctx)
			if err != nil {
				return err
			}
			return report.WriteNativeTasks(f.IO, format, tasks, ep.Name())
		})
}

func newCmdRedriveCancel(f *Factory) *cobra.Command {
	return newCmdNativeTask(f, "cancel DLQ", "Cancel the DLQ's running native move task",
		`Cancel the running SQS move task of a DLQ. Messages already moved stay moved; the rest stay in the DLQ.`,
		"stop a running 'dlqctl redrive' with Ctrl-C (it finishes its batch)", func(ctx context.Context, ep broker.Endpoint, m broker.NativeMover, format output.Format) error {
			t, err := m.CancelNative(ctx)
			if errors.Is(err, broker.ErrNoNativeMove) {
				f.IO.Infof("no running move task for %s; nothing to cancel", ep.Name())
				return nil
			}
			if err != nil {
				return err
			}
			if format == output.JSON || format == output.NDJSON {
				return output.WriteJSON(f.IO.Out, t)
			}
			f.IO.Infof("cancelled the move task of %s after %d message(s)", ep.Name(), t.Moved)
			return nil
		})
}
