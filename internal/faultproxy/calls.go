package faultproxy

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Deny answers the request as AWS does when IAM refuses it: AccessDenied
// in the protocol of the service (SQS JSON with its query-compatible
// error code, CloudWatch Logs JSON, S3 REST XML with 403), without
// forwarding it. Tests use it to take a permission away from one action.
const Deny = "deny"

// DeniedPrincipal is the principal named in Deny's error messages.
const DeniedPrincipal = "arn:aws:sts::123456789012:assumed-role/dlqctl-test/denied"

// Call is one request the proxy received: the operation and the resource
// it names (an SQS queue URL, "bucket" or "bucket/key" for S3, a log group
// name for CloudWatch Logs; "" for account-wide calls).
type Call struct {
	Action   string
	Resource string
	// AppID is the caller's SDK application id (the "app/ID" token of the
	// User-Agent, set by AWS_SDK_UA_APP_ID), so a test can tell which
	// process made the call.
	AppID string
}

// appID reads the "app/ID" token of an AWS SDK User-Agent.
func appID(ua string) string {
	for _, f := range strings.Fields(ua) {
		if id, ok := strings.CutPrefix(f, "app/"); ok {
			return id
		}
	}
	return ""
}

// maxCalls bounds the call log (long benchmarks go through proxies too).
const maxCalls = 1 << 20

// Calls returns every request received since the start or the last
// ResetStats, in order.
func (p *Proxy) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

func (p *Proxy) logCall(action string, r *http.Request, body []byte) {
	c := Call{Action: action, Resource: resourceOf(r, body), AppID: appID(r.Header.Get("User-Agent"))}
	p.mu.Lock()
	if len(p.calls) < maxCalls {
		p.calls = append(p.calls, c)
	}
	p.mu.Unlock()
}

// resourceOf reads the resource a request names: QueueUrl (or QueueName,
// SourceArn) of an SQS JSON or Query request, logGroupName /
// logGroupIdentifier of a CloudWatch Logs request, bucket[/key] of an S3
// path-style request.
func resourceOf(r *http.Request, body []byte) string {
	if r.Header.Get("X-Amz-Target") != "" {
		var in map[string]any
		if json.Unmarshal(body, &in) == nil {
			for _, k := range []string{"QueueUrl", "SourceArn", "QueueName", "logGroupName", "logGroupIdentifier", "TaskHandle"} {
				if v, ok := in[k].(string); ok && v != "" {
					return v
				}
			}
		}
		return ""
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if v, err := url.ParseQuery(string(body)); err == nil {
			for _, k := range []string{"QueueUrl", "SourceArn", "QueueName"} {
				if x := v.Get(k); x != "" {
					return x
				}
			}
		}
		return ""
	}
	return strings.TrimPrefix(r.URL.Path, "/")
}

func writeDenied(w http.ResponseWriter, r *http.Request, action string) {
	target := r.Header.Get("X-Amz-Target")
	switch {
	case strings.HasPrefix(target, "AmazonSQS."):
		msg := fmt.Sprintf("User: %s is not authorized to perform: sqs:%s on resource: %s because no identity-based policy allows the sqs:%s action",
			DeniedPrincipal, strings.ToLower(strings.TrimSuffix(action, "Batch")), "arn:aws:sqs:us-east-1:123456789012:queue", strings.TrimSuffix(action, "Batch"))
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-query-error", "AccessDenied;Sender")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]string{"__type": "com.amazon.coral.service#AccessDeniedException", "message": msg})
		w.Write(b)
	case target != "":
		service := strings.ToLower(strings.SplitN(target, "_", 2)[0])
		if strings.HasPrefix(target, "Logs_") {
			service = "logs"
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]string{"__type": "AccessDeniedException",
			"message": fmt.Sprintf("User: %s is not authorized to perform: %s:%s", DeniedPrincipal, service, action)})
		w.Write(b)
	default: // S3 REST
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		if r.Method == http.MethodHead {
			return
		}
		type errXML struct {
			XMLName xml.Name `xml:"Error"`
			Code    string   `xml:"Code"`
			Message string   `xml:"Message"`
		}
		b, _ := xml.Marshal(errXML{Code: "AccessDenied", Message: "Access Denied"})
		w.Write(append([]byte(xml.Header), b...))
	}
}
