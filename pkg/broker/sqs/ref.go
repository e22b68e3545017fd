package sqs

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// RefKind says how a queue reference names its queue.
type RefKind int

// Kinds of queue references.
const (
	RefName RefKind = iota // a bare queue name
	RefURL                 // a queue URL
	RefARN                 // an SQS queue ARN
)

// Ref is a parsed queue reference (what the user typed), before any call to
// SQS.
type Ref struct {
	Kind RefKind
	// Raw is the reference as given (trimmed).
	Raw string
	// Name is the queue name (the last segment of a URL path or ARN).
	Name string
	// Account is the owning account id when the reference says it.
	Account string
	// Region is the region the reference is in, when it says so: an ARN's
	// region, or the region in an AWS SQS endpoint host of a URL (see
	// URLRegion). "" when unknown (a name, a local emulator's URL).
	Region string
	// URL is the queue URL of a RefURL.
	URL string
}

// maxRefLen bounds what ParseRef looks at: queue names are at most 80
// characters, so a real reference is far shorter.
const maxRefLen = 2048

// ParseRef parses a queue reference: a name, a URL or an ARN. A malformed
// URL or ARN is a bad-input error naming the expected shape.
func ParseRef(s string) (Ref, error) {
	s = strings.TrimSpace(s)
	r := Ref{Raw: s}
	switch {
	case s == "":
		return r, errs.BadInputf("empty queue reference; pass a queue name, URL or ARN")
	case len(s) > maxRefLen:
		return r, errs.BadInputf("queue reference of %d characters is too long to be a queue name, URL or ARN", len(s))
	case strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return r, errs.BadInputf("%q is not a queue URL; expected https://sqs.REGION.amazonaws.com/ACCOUNT/NAME", s)
		}
		p := strings.Trim(u.Path, "/")
		name := p[strings.LastIndexByte(p, '/')+1:]
		if name == "" {
			return r, errs.BadInputf("%q is not a queue URL; expected https://sqs.REGION.amazonaws.com/ACCOUNT/NAME", s)
		}
		r.Kind, r.URL, r.Name = RefURL, s, name
		if i := strings.LastIndexByte(p, '/'); i > 0 {
			r.Account = p[strings.LastIndexByte(p[:i], '/')+1 : i]
		}
		r.Region = URLRegion(u.Hostname())
		return r, nil
	case strings.HasPrefix(s, "arn:"):
		parts := strings.Split(s, ":")
		if len(parts) != 6 || parts[2] != "sqs" || parts[5] == "" {
			return r, errs.BadInputf("%q is not an SQS queue ARN; expected arn:aws:sqs:REGION:ACCOUNT:NAME", s)
		}
		r.Kind, r.Region, r.Account, r.Name = RefARN, parts[3], parts[4], parts[5]
		return r, nil
	}
	r.Kind, r.Name = RefName, s
	return r, nil
}

// A region as AWS spells them: us-east-1, eu-central-2, us-gov-west-1,
// cn-north-1, ap-southeast-7, eusc-de-east-1.
const regionPattern = `[a-z]{2,4}(?:-[a-z]+)+-\d{1,2}`

// sqsHost matches the SQS endpoint hosts of AWS that carry a region:
//
//	sqs.REGION.amazonaws.com            the regional endpoint
//	sqs.REGION.amazonaws.com.cn         China
//	sqs-fips.REGION.amazonaws.com       FIPS
//	sqs.REGION.api.aws                  dual-stack
//	REGION.queue.amazonaws.com          legacy queue URLs
//	vpce-ID.sqs.REGION.vpce.amazonaws.com  an interface VPC endpoint
//	sqs.REGION.vpce.amazonaws.com       (private DNS names resolve to the
//	                                     regional endpoint anyway)
var sqsHost = regexp.MustCompile(`^(?:` +
	`(?:vpce-[a-z0-9-]+\.)?sqs(?:-fips)?\.(` + regionPattern + `)\.(?:vpce\.)?(?:amazonaws\.com(?:\.cn)?|api\.aws)` +
	`|(` + regionPattern + `)\.queue\.amazonaws\.com(?:\.cn)?` +
	`)$`)

// URLRegion returns the AWS region named by an SQS endpoint host ("" when
// the host is not one of AWS's SQS hosts, e.g. a local emulator). The
// legacy global host queue.amazonaws.com is us-east-1.
func URLRegion(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "queue.amazonaws.com" {
		return "us-east-1"
	}
	m := sqsHost.FindStringSubmatch(host)
	if m == nil {
		return ""
	}
	if m[1] != "" {
		return m[1]
	}
	return m[2]
}
