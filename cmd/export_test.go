package cmd

import "github.com/dlqctl/dlqctl/pkg/redrive"

// SetReferenceReader switches --from input to the sequential encoding/json
// reader (the one before the parallel reader), for the cmd_test package's
// comparison of the two (fromread_test.go).
func SetReferenceReader(on bool) { referenceReader = on }

// CustomS3Endpoint and S3EndpointOverride say what the factory decided
// about S3 endpoints (endpoints_test.go).
func (f *Factory) CustomS3Endpoint() bool { return f.Opts.CustomS3Endpoint() }

// S3EndpointOverride: see CustomS3Endpoint.
func (f *Factory) S3EndpointOverride() string { return f.Opts.S3EndpointOverride() }

// Apply fills the engine's pace options as redrive does (rateshare_flags_test.go).
func (p *PaceFlags) Apply(o *redrive.Options) { p.apply(o) }
