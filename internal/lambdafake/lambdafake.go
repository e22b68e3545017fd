// Package lambdafake is a small AWS Lambda endpoint for dlqctl's tests and
// demo: moto_server keeps Lambda's configuration but cannot execute a
// function without Docker, and (5.2.1) drops a function's DeadLetterConfig.
// lambdafake sits in front of moto (point AWS_ENDPOINT_URL_LAMBDA at it):
//
//   - Invoke (POST /2015-03-31/functions/NAME/invocations) is served here:
//     InvocationType Event answers 202 as Lambda does when it accepts an
//     asynchronous invocation, RequestResponse 200 with the payload "null",
//     DryRun 204; a function moto does not know answers 404
//     ResourceNotFoundException. Every accepted payload is recorded
//     (Invocations) so a test can see exactly what reached the function.
//   - A function whose environment sets LAMBDAFAKE_FAIL=true fails every
//     asynchronous invocation the way Lambda reports a function that kept
//     failing once its retries are spent: the event goes to its
//     DeadLetterConfig queue (body = the event; attributes RequestID,
//     ErrorCode, ErrorMessage) or, without one, to its on-failure
//     destination queue (an invocation record with requestContext and
//     requestPayload).
//   - LAMBDAFAKE_DELAY_MS=N makes it answer an accepted invocation N ms
//     late (it is recorded at once): a slow endpoint, to kill a client
//     mid-call.
//   - CreateFunction / UpdateFunctionConfiguration keep DeadLetterConfig,
//     and GetFunction, GetFunctionConfiguration and ListFunctions answer
//     with it, as Lambda does.
//   - Everything else is passed to moto unchanged.
//
// Ops counts the Lambda operations it saw (for the IAM recorded-calls test).
package lambdafake

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Invocation is one invocation lambdafake accepted.
type Invocation struct {
	Function  string    `json:"function"` // the function's name (no qualifier)
	Qualifier string    `json:"qualifier,omitempty"`
	Type      string    `json:"type"` // Event, RequestResponse
	Payload   string    `json:"payload"`
	RequestID string    `json:"request_id"`
	At        time.Time `json:"at"`
}

// Server is the endpoint; it is an http.Handler.
type Server struct {
	upstream *url.URL
	proxy    *httputil.ReverseProxy
	sqs      *sqs.Client

	mu    sync.Mutex
	dlc   map[string]string // function name -> DeadLetterConfig.TargetArn
	inv   []Invocation
	ops   map[string]int
	fails []error // failures delivering a failed invocation to its DLQ
}

// New serves Lambda in front of the moto_server at upstream (its SQS
// receives what failing functions dead-letter).
func New(upstream string) (*Server, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	s := &Server{upstream: u, dlc: map[string]string{}, ops: map[string]int{}}
	s.proxy = httputil.NewSingleHostReverseProxy(u)
	orig := s.proxy.Director
	s.proxy.Director = func(r *http.Request) {
		orig(r)
		r.Host = u.Host
		r.Header.Del("Accept-Encoding")
	}
	s.proxy.ModifyResponse = s.addDeadLetterConfig
	s.sqs = sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(upstream),
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})
	return s, nil
}

// Invocations returns the invocations accepted so far.
func (s *Server) Invocations() []Invocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Invocation(nil), s.inv...)
}

// Ops returns how many calls of each Lambda operation it saw.
func (s *Server) Ops() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.ops))
	for k, v := range s.ops {
		out[k] = v
	}
	return out
}

// ResetOps forgets the operations seen so far.
func (s *Server) ResetOps() {
	s.mu.Lock()
	s.ops = map[string]int{}
	s.mu.Unlock()
}

// DeliveryErrors are the failures to dead-letter a failing invocation.
func (s *Server) DeliveryErrors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.fails...)
}

// functionName reads a function name from a path segment: a name, a
// partial or full ARN, with or without a qualifier.
func functionName(seg string) (name, qualifier string) {
	seg, _ = url.PathUnescape(seg)
	if i := strings.Index(seg, "function:"); i >= 0 {
		seg = seg[i+len("function:"):]
	}
	name, qualifier, _ = strings.Cut(seg, ":")
	return name, qualifier
}

// opOf names the Lambda operation of a request.
func opOf(r *http.Request) (op, fn string) {
	p := strings.Trim(r.URL.EscapedPath(), "/")
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return "", ""
	}
	if len(parts) >= 3 {
		fn, _ = functionName(parts[2])
	}
	switch {
	case parts[1] == "functions" && len(parts) == 2 && r.Method == http.MethodGet:
		return "ListFunctions", ""
	case parts[1] == "functions" && len(parts) == 2 && r.Method == http.MethodPost:
		return "CreateFunction", ""
	case len(parts) == 4 && parts[3] == "invocations":
		return "InvokeFunction", fn
	case len(parts) == 4 && parts[3] == "configuration" && r.Method == http.MethodGet:
		return "GetFunctionConfiguration", fn
	case len(parts) == 4 && parts[3] == "configuration" && r.Method == http.MethodPut:
		return "UpdateFunctionConfiguration", fn
	case len(parts) == 3 && r.Method == http.MethodGet:
		return "GetFunction", fn
	case len(parts) == 3 && r.Method == http.MethodDelete:
		return "DeleteFunction", fn
	case len(parts) == 4 && parts[3] == "event-invoke-config" && r.Method == http.MethodGet:
		return "GetFunctionEventInvokeConfig", fn
	case len(parts) == 4 && parts[3] == "event-invoke-config":
		return "PutFunctionEventInvokeConfig", fn
	case len(parts) == 5 && parts[3] == "event-invoke-config" && parts[4] == "list":
		return "ListFunctionEventInvokeConfigs", fn
	}
	return r.Method + " " + p, fn
}

// ServeHTTP serves Invoke and passes the rest to moto.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, fn := opOf(r)
	s.mu.Lock()
	s.ops[op]++
	s.mu.Unlock()
	switch op {
	case "InvokeFunction":
		s.invoke(w, r)
		return
	case "CreateFunction", "UpdateFunctionConfiguration":
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		var in struct {
			FunctionName     string
			DeadLetterConfig *struct{ TargetArn string }
		}
		if json.Unmarshal(body, &in) == nil && in.DeadLetterConfig != nil {
			if op == "CreateFunction" {
				fn, _ = functionName(in.FunctionName)
			}
			s.mu.Lock()
			if in.DeadLetterConfig.TargetArn == "" {
				delete(s.dlc, fn)
			} else {
				s.dlc[fn] = in.DeadLetterConfig.TargetArn
			}
			s.mu.Unlock()
		}
	case "DeleteFunction":
		s.mu.Lock()
		delete(s.dlc, fn)
		s.mu.Unlock()
	}
	s.proxy.ServeHTTP(w, r)
}

// addDeadLetterConfig adds the DeadLetterConfig lambdafake keeps to the
// function configurations moto answers with.
func (s *Server) addDeadLetterConfig(resp *http.Response) error {
	op, _ := opOf(resp.Request)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return nil
	}
	if op != "GetFunction" && op != "GetFunctionConfiguration" && op != "ListFunctions" && op != "CreateFunction" && op != "UpdateFunctionConfiguration" {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var doc map[string]any
	if json.Unmarshal(body, &doc) == nil {
		s.mu.Lock()
		patch := func(cfg map[string]any) {
			name, _ := cfg["FunctionName"].(string)
			if arn, ok := s.dlc[name]; ok {
				cfg["DeadLetterConfig"] = map[string]any{"TargetArn": arn}
			}
		}
		switch op {
		case "GetFunction":
			if cfg, ok := doc["Configuration"].(map[string]any); ok {
				patch(cfg)
			}
		case "ListFunctions":
			if fns, ok := doc["Functions"].([]any); ok {
				for _, f := range fns {
					if cfg, ok := f.(map[string]any); ok {
						patch(cfg)
					}
				}
			}
		default:
			patch(doc)
		}
		s.mu.Unlock()
		if b, err := json.Marshal(doc); err == nil {
			body = b
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return nil
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func lambdaError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.Header().Set("X-Amzn-RequestId", requestID())
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"Type": "User", "Message": msg, "message": msg})
	w.Write(b)
}

// function is what lambdafake needs of a function's configuration.
type function struct {
	ARN     string
	Fail    bool
	DLQ     string
	Timeout int
	// Delay is how long it takes to answer an invocation it accepted
	// (LAMBDAFAKE_DELAY_MS): a slow endpoint, for kill -9 tests.
	Delay time.Duration
}

// lookup asks moto for the function's configuration.
func (s *Server) lookup(ctx context.Context, r *http.Request, name string) (*function, int, error) {
	u := *s.upstream
	u.Path = "/2015-03-31/functions/" + url.PathEscape(name) + "/configuration"
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	// moto reads the account and region from the request's signature.
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	var cfg struct {
		FunctionArn string
		Timeout     int
		Environment *struct{ Variables map[string]string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
		return nil, 0, err
	}
	f := &function{ARN: cfg.FunctionArn, Timeout: cfg.Timeout}
	if cfg.Environment != nil {
		f.Fail = cfg.Environment.Variables["LAMBDAFAKE_FAIL"] == "true"
		if ms, err := strconv.Atoi(cfg.Environment.Variables["LAMBDAFAKE_DELAY_MS"]); err == nil {
			f.Delay = time.Duration(ms) * time.Millisecond
		}
	}
	s.mu.Lock()
	f.DLQ = s.dlc[name]
	s.mu.Unlock()
	return f, http.StatusOK, nil
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	name, qual := functionName(parts[2])
	if q := r.URL.Query().Get("Qualifier"); q != "" {
		qual = q
	}
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	f, status, err := s.lookup(r.Context(), r, name)
	switch {
	case err != nil:
		lambdaError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	case status == http.StatusNotFound:
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	case status != http.StatusOK:
		lambdaError(w, http.StatusInternalServerError, "ServiceException", fmt.Sprintf("moto answered %d for the function's configuration", status))
		return
	}
	if len(payload) > 0 && !json.Valid(payload) {
		lambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}
	typ := r.Header.Get("X-Amz-Invocation-Type")
	if typ == "" {
		typ = "RequestResponse"
	}
	id := requestID()
	w.Header().Set("X-Amzn-RequestId", id)
	switch typ {
	case "DryRun":
		w.WriteHeader(http.StatusNoContent)
		return
	case "Event":
		if len(payload) > 1<<20 {
			lambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 1048576 bytes for the InvokeAsync operation")
			return
		}
	case "RequestResponse":
	default:
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", "invalid InvocationType "+typ)
		return
	}
	s.mu.Lock()
	s.inv = append(s.inv, Invocation{Function: name, Qualifier: qual, Type: typ, Payload: string(payload), RequestID: id, At: time.Now().UTC()})
	s.mu.Unlock()
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	if typ == "Event" {
		w.WriteHeader(http.StatusAccepted)
		if f.Fail {
			go s.deadLetter(r.Header.Clone(), name, f, id, payload)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("null"))
}

// deadLetter does what Lambda does with an asynchronous event whose
// function kept failing: DeadLetterConfig first, else the on-failure
// destination.
func (s *Server) deadLetter(h http.Header, name string, f *function, id string, payload []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const errMsg = `{"errorType":"Error","errorMessage":"lambdafake: LAMBDAFAKE_FAIL is set"}`
	target, body := f.DLQ, string(payload)
	attrs := map[string]sqstypes.MessageAttributeValue{
		"RequestID":    {DataType: aws.String("String"), StringValue: aws.String(id)},
		"ErrorCode":    {DataType: aws.String("Number"), StringValue: aws.String("200")},
		"ErrorMessage": {DataType: aws.String("String"), StringValue: aws.String(errMsg)},
	}
	if target == "" {
		dest, err := s.onFailure(ctx, h, name)
		if err != nil || dest == "" {
			s.fail(fmt.Errorf("function %s failed and has neither a DeadLetterConfig nor an on-failure destination (%v)", name, err))
			return
		}
		rec, _ := json.Marshal(map[string]any{
			"version":   "1.0",
			"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
			"requestContext": map[string]any{"requestId": id, "functionArn": f.ARN + ":$LATEST",
				"condition": "RetriesExhausted", "approximateInvokeCount": 1},
			"requestPayload":  json.RawMessage(payload),
			"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
			"responsePayload": json.RawMessage(errMsg),
		})
		target, body, attrs = dest, string(rec), nil
	}
	i := strings.LastIndexByte(target, ':')
	parts := strings.Split(target, ":")
	if i < 0 || len(parts) < 6 {
		s.fail(fmt.Errorf("function %s: dead-letter target %q is not an SQS queue ARN", name, target))
		return
	}
	u, err := s.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		s.fail(fmt.Errorf("function %s: dead-letter queue %s: %w", name, target, err))
		return
	}
	if _, err := s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: u.QueueUrl, MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
		s.fail(fmt.Errorf("function %s: dead-lettering to %s: %w", name, target, err))
	}
}

func (s *Server) onFailure(ctx context.Context, h http.Header, name string) (string, error) {
	u := *s.upstream
	u.Path = "/2019-09-25/functions/" + url.PathEscape(name) + "/event-invoke-config"
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	for _, k := range []string{"Authorization", "X-Amz-Date"} {
		req.Header.Set(k, h.Get(k))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var cfg struct {
		DestinationConfig *struct{ OnFailure *struct{ Destination string } }
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&cfg) != nil || cfg.DestinationConfig == nil || cfg.DestinationConfig.OnFailure == nil {
		return "", nil
	}
	return cfg.DestinationConfig.OnFailure.Destination, nil
}

func (s *Server) fail(err error) {
	s.mu.Lock()
	s.fails = append(s.fails, err)
	s.mu.Unlock()
}
