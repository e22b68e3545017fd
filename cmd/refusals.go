package cmd

import (
	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// The flags only some brokers can honour, and what to use instead. A
// command checks the flags it was given against the endpoint's
// capabilities once the reference is resolved, before anything is read:
// a flag the broker cannot honour is exit 2 naming the broker.
var (
	needsNativeMove = broker.Requirement{
		Flag:    "--engine native",
		Needs:   func(c broker.Capabilities) bool { return c.NativeMove },
		Why:     "{broker} has no native move",
		Instead: "use --engine dlqctl (the default)",
	}
	needsLease = func(flag string) broker.Requirement {
		return broker.Requirement{
			Flag:    flag,
			Needs:   func(c broker.Capabilities) bool { return c.Hold == broker.HoldLease },
			Why:     "{broker} holds a message as {hold}, not with a visibility timeout",
			Instead: "drop " + flag,
		}
	}
)

// leaseFlags are flags about a lease's visibility timeout.
var leaseFlags = []string{"visibility", "wait-inflight"}

// refuseFlags returns the refusal for the first flag set in fs (changed by
// the user) that caps cannot honour; native says --engine native was
// asked for.
func refuseFlags(caps broker.Capabilities, fs *pflag.FlagSet, native bool) error {
	var reqs []broker.Requirement
	if native {
		reqs = append(reqs, needsNativeMove)
	}
	if fs != nil {
		for _, name := range leaseFlags {
			if fl := fs.Lookup(name); fl != nil && fl.Changed {
				reqs = append(reqs, needsLease("--"+name))
			}
		}
	}
	return broker.Refuse(caps, reqs...)
}
