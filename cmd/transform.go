package cmd

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/dlqctl/dlqctl/pkg/archive"
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/redrive"
	"github.com/dlqctl/dlqctl/pkg/transform"
)

// TransformFlags are redrive's --transform, --transform-file and
// --archive-originals (and restore's --transform). They are stored with
// the run's options, so a resume repairs the same way.
type TransformFlags struct {
	Expression string `json:"expression,omitempty"`
	// File is where the expression was read from (for messages).
	File      string `json:"file,omitempty"`
	Originals string `json:"archive_originals,omitempty"`
	SSE       string `json:"sse,omitempty"`
	KMSKeyID  string `json:"kms_key_id,omitempty"`

	// The flags parsed once (parse): the expression compiled (the
	// destination's limits are set when it is known) and the archive of
	// originals (nil without --archive-originals) and its encryption.
	xf   *transform.Transform
	dest *archive.Location
	enc  archive.Encryption
}

const transformHelp = `repair each selected message with this jq expression before sending it: it gets the message record (as --filter does) and returns the record to send (body or .json, attributes; on Kafka .system.kafka.key and .system.kafka.headers); e.g. '.json.amount |= tonumber'; needs --archive-originals`

// AddFlags adds --transform and --transform-file; withOriginals adds
// --archive-originals (redrive: the DLQ's originals must be kept first).
func (t *TransformFlags) AddFlags(fl *pflag.FlagSet, withOriginals bool) {
	fl.StringVar(&t.Expression, "transform", "", transformHelp)
	fl.StringVar(&t.File, "transform-file", "", "read the --transform expression from this file")
	if withOriginals {
		fl.StringVar(&t.Originals, "archive-originals", "", "with --transform: archive every original to this S3 location (s3://BUCKET/PREFIX; verified parts and a manifest, as 'archive' writes) before its repaired copy is sent")
		fl.StringVar(&t.SSE, "originals-sse", "", "server-side encryption of the originals: AES256, aws:kms or aws:kms:dsse (default: the bucket's)")
		fl.StringVar(&t.KMSKeyID, "originals-kms-key-id", "", "KMS key for --originals-sse aws:kms")
	}
}

// Active reports whether a transform was asked for.
func (t *TransformFlags) Active() bool { return t.Expression != "" || t.File != "" }

// validate reads --transform-file and checks the combination; needOriginals
// is true for a redrive (a queue is read: its originals must be kept).
func (t *TransformFlags) validate(needOriginals, dryRun bool) error {
	if t.File != "" {
		if t.Expression != "" {
			return errs.BadInputf("--transform and --transform-file exclude each other; give the expression once")
		}
		b, err := os.ReadFile(t.File)
		if err != nil {
			return errs.BadInputf("--transform-file %s cannot be read: %v", t.File, err)
		}
		t.Expression = string(b)
		if strings.TrimSpace(t.Expression) == "" {
			return errs.BadInputf("--transform-file %s is empty; write the jq expression in it", t.File)
		}
	}
	if !t.Active() {
		if t.Originals != "" {
			return errs.BadInputf("--archive-originals keeps the originals of a --transform run; add --transform EXPR, or use 'dlqctl archive' to archive a queue")
		}
	}
	if (t.SSE != "" || t.KMSKeyID != "") && t.Originals == "" {
		return errs.BadInputf("--originals-sse and --originals-kms-key-id encrypt the originals of a --transform run; add --archive-originals s3://BUCKET/PREFIX, or drop them")
	}
	if err := (archive.Encryption{SSE: t.SSE, KMSKeyID: t.KMSKeyID}).Validate("--originals-sse", "--originals-kms-key-id"); err != nil {
		return err
	}
	if !t.Active() {
		return nil
	}
	if err := t.parse(); err != nil {
		return err
	}
	if needOriginals && t.Originals == "" && !dryRun {
		return errs.BadInputf("--transform changes messages, so their originals must be kept first: add --archive-originals s3://BUCKET/PREFIX (every original is archived and verified there before its repaired copy is sent); --dry-run shows the changes without it")
	}
	return nil
}

// parse compiles the expression (without the destination's limits) and
// parses --archive-originals into the typed values a run is opened with;
// validate calls it, and a resume on the flags its journal keeps.
func (t *TransformFlags) parse() error {
	t.xf, t.dest, t.enc = nil, nil, archive.Encryption{}
	if !t.Active() {
		return nil
	}
	xf, err := transform.Compile(t.Expression, transform.Limits{})
	if err != nil {
		return err
	}
	t.xf = xf
	if t.Originals != "" {
		loc, err := archive.ParseS3URI(t.Originals)
		if err != nil {
			return errs.BadInputf("--archive-originals %q: %v; give s3://BUCKET/PREFIX", t.Originals, err)
		}
		t.dest = &loc
		t.enc = archive.Encryption{SSE: t.SSE, KMSKeyID: t.KMSKeyID}
	}
	return nil
}

// limited is the compiled transform (nil without one), held to the
// destination's limits.
func (t *TransformFlags) limited(caps broker.Capabilities) *transform.Transform {
	if t.xf != nil {
		t.xf.SetLimits(transform.Limits{MaxMessageBytes: caps.MaxMessageBytes, MaxAttributes: caps.MaxAttributes})
	}
	return t.xf
}

// compile builds the transform with the destination's limits.
func (t *TransformFlags) compile(caps broker.Capabilities) (*transform.Transform, error) {
	if !t.Active() {
		return nil, nil
	}
	xf, err := transform.Compile(t.Expression, transform.Limits{MaxMessageBytes: caps.MaxMessageBytes, MaxAttributes: caps.MaxAttributes})
	if err != nil {
		return nil, err
	}
	return xf, nil
}

// meta is what the run's journal records of the transform.
func (t *TransformFlags) meta(xf *transform.Transform) *redrive.TransformMeta {
	if xf == nil {
		return nil
	}
	return &redrive.TransformMeta{Expression: xf.Source(), SHA256: xf.SHA256(), Originals: t.Originals}
}

// fingerprintPart is what a transform adds to a run's fingerprint: the
// same command with another expression or archive is another run.
func (t *TransformFlags) fingerprintPart() string {
	if !t.Active() {
		return ""
	}
	b, _ := json.Marshal([]string{t.Expression, t.Originals})
	return string(b)
}

// watchTransformErrors prints the first transform failures with -v.
func watchTransformErrors(f *Factory, xf *transform.Transform) {
	if xf == nil || !f.Opts.Verbose {
		return
	}
	xf.Tally().OnError(func(e *transform.Error) { f.IO.Infof("%s; left where it is", e.Error()) })
}

// selectionText describes a selection for the originals' manifest.
func selectionText(sel *classify.Selector) string {
	if sel == nil {
		return "all messages"
	}
	return sel.Describe()
}
