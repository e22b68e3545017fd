package archive

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// S3API is the part of the S3 client dlqctl uses; *s3.Client satisfies it.
type S3API interface {
	HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	// ListObjectsV2 finds the runs under a prefix (--from s3://…/queue=X/).
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Encryption is the server-side encryption asked for every object.
type Encryption struct {
	SSE      string // "", "AES256", "aws:kms" or "aws:kms:dsse"
	KMSKeyID string
}

// Validate refuses an SSE mode S3 does not know and a KMS key without a
// KMS mode, naming the flags that gave them (sseFlag, kmsFlag).
func (e Encryption) Validate(sseFlag, kmsFlag string) error {
	switch e.SSE {
	case "", "AES256", "aws:kms", "aws:kms:dsse":
	default:
		return errs.BadInputf("%s %q: use AES256, aws:kms or aws:kms:dsse", sseFlag, e.SSE)
	}
	if e.KMSKeyID != "" && !strings.HasPrefix(e.SSE, "aws:kms") {
		return errs.BadInputf("%s needs %s aws:kms (or aws:kms:dsse)", kmsFlag, sseFlag)
	}
	return nil
}

// ErrExists means an object with the key already exists; dlqctl never
// overwrites an archive object.
var ErrExists = errors.New("object already exists; dlqctl never overwrites archive objects")

// ErrVerify means an uploaded object does not match what was written.
var ErrVerify = errors.New("uploaded object does not match the local part")

// CheckBucket makes sure the bucket exists and is reachable before anything
// is received. Problems are bad-input errors naming the fix.
func CheckBucket(ctx context.Context, api S3API, bucket string) error {
	_, err := api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case isNotFound(err):
		return errs.BadInputf("S3 bucket %q does not exist (or is not visible to these credentials); create it or fix --to", bucket)
	case statusCode(err) == http.StatusForbidden || apiCode(err) == "AccessDenied":
		return errs.BadInputf("access to S3 bucket %q denied; the credentials in use need s3:ListBucket, s3:PutObject and s3:GetObject on it (see 'dlqctl help iam'), and with --bucket-owner the bucket must belong to that account", bucket)
	case isUnreachable(err):
		return errs.BadInputf("cannot reach the S3 endpoint (%v); check --s3-endpoint-url / AWS_ENDPOINT_URL_S3 and your network", firstLine(err))
	}
	return fmt.Errorf("checking S3 bucket %q: %w", bucket, err)
}

// Put uploads body (size bytes, SHA-256 digest sum) to bucket/key with an
// explicit SHA-256 checksum (S3 rejects the upload when the bytes it
// received do not match) and If-None-Match: * (S3 refuses to overwrite an
// existing key with 412). A 412 whose object has our SHA-256 and size is
// our own earlier attempt (the SDK retried a PUT that had landed) and is
// success; any other object under the key is ErrExists. A 409
// ConditionalRequestConflict is retried a few times.
func Put(ctx context.Context, api S3API, bucket, key string, body io.ReadSeeker, size int64, sum []byte, contentType string, enc Encryption) error {
	return put(ctx, api, bucket, key, body, size, sum, contentType, enc, false)
}

// put is Put; replace drops the condition that the key is new (for a
// manifest a later attempt of the same run rewrites with more parts,
// never for data).
func put(ctx context.Context, api S3API, bucket, key string, body io.ReadSeeker, size int64, sum []byte, contentType string, enc Encryption, replace bool) error {
	in := &s3.PutObjectInput{
		Bucket:            aws.String(bucket),
		Key:               aws.String(key),
		Body:              body,
		ContentLength:     aws.Int64(size),
		ContentType:       aws.String(contentType),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
		ChecksumSHA256:    aws.String(base64.StdEncoding.EncodeToString(sum)),
	}
	if !replace {
		in.IfNoneMatch = aws.String("*")
	}
	if enc.SSE != "" {
		in.ServerSideEncryption = types.ServerSideEncryption(enc.SSE)
	}
	if enc.KMSKeyID != "" {
		in.SSEKMSKeyId = aws.String(enc.KMSKeyID)
	}
	var err error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if _, serr := body.Seek(0, io.SeekStart); serr != nil {
				return fmt.Errorf("uploading s3://%s/%s: rewinding the part: %w", bucket, key, serr)
			}
		}
		_, err = api.PutObject(ctx, in)
		if err == nil {
			return nil
		}
		// 409 ConditionalRequestConflict: a concurrent conditional write
		// to the key is in progress; AWS says to retry.
		if statusCode(err) == http.StatusConflict && apiCode(err) == "ConditionalRequestConflict" && attempt < 3 && ctx.Err() == nil {
			time.Sleep(time.Duration(200<<attempt) * time.Millisecond)
			continue
		}
		break
	}
	if c := statusCode(err); c == http.StatusPreconditionFailed || c == http.StatusConflict && apiCode(err) == "ConditionalRequestConflict" {
		// The key exists. When the SDK retried this PUT after an attempt
		// that did land (its answer lost: a 5xx, a reset), the object is
		// ours: accept it when its SHA-256 and size are what we wrote.
		if verr := Verify(ctx, api, bucket, key, size, sum); verr == nil {
			return nil
		}
		return fmt.Errorf("s3://%s/%s: %w", bucket, key, ErrExists)
	}
	if isAccessDenied(err) {
		return fmt.Errorf("uploading s3://%s/%s: access denied (%v); the credentials need s3:PutObject on arn:aws:s3:::%s/*%s (see 'dlqctl help iam')", bucket, key, describeS3(err), bucket, kmsHint(enc.SSE, "kms:GenerateDataKey"))
	}
	return fmt.Errorf("uploading s3://%s/%s: %w", bucket, key, describeS3(err))
}

// isAccessDenied: S3 (or KMS behind it) refused the call.
func isAccessDenied(err error) bool {
	switch apiCode(err) {
	case "AccessDenied", "AllAccessDisabled", "KMS.AccessDeniedException", "KMS.DisabledException", "KMS.NotFoundException":
		return true
	}
	return statusCode(err) == http.StatusForbidden
}

// kmsHint names the KMS permission an SSE-KMS call also needs.
func kmsHint(sse, action string) string {
	if strings.HasPrefix(sse, "aws:kms") {
		return fmt.Sprintf(", and %s on the KMS key (--sse %s)", action, sse)
	}
	return ""
}

// Verify reads the object's stored SHA-256 checksum and size back with
// HeadObject (checksum mode enabled) and compares them with what was
// written. Any difference, or a missing checksum, is ErrVerify.
func Verify(ctx context.Context, api S3API, bucket, key string, size int64, sum []byte) error {
	out, err := api.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       aws.String(bucket),
		Key:          aws.String(key),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return fmt.Errorf("verifying s3://%s/%s: %w", bucket, key, describeS3(err))
	}
	want := base64.StdEncoding.EncodeToString(sum)
	got := aws.ToString(out.ChecksumSHA256)
	switch {
	case got == "":
		return fmt.Errorf("s3://%s/%s: %w: the server returned no SHA-256 checksum", bucket, key, ErrVerify)
	case got != want:
		return fmt.Errorf("s3://%s/%s: %w: SHA-256 %s, expected %s", bucket, key, ErrVerify, b64Hex(got), hex.EncodeToString(sum))
	case aws.ToInt64(out.ContentLength) != size:
		return fmt.Errorf("s3://%s/%s: %w: %d bytes, expected %d", bucket, key, ErrVerify, aws.ToInt64(out.ContentLength), size)
	}
	return nil
}

func b64Hex(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return s
	}
	return hex.EncodeToString(b)
}

// Source opens archive objects by key: S3 objects, or files in a local
// directory (a downloaded archive run, parts next to the manifest).
type Source interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Name renders key for messages (s3://… or a path).
	Name(key string) string
}

// S3Source reads objects from one bucket.
type S3Source struct {
	API    S3API
	Bucket string
}

// Open gets the object.
func (s S3Source) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	out, err := s.API.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return nil, errs.BadInputf("%s does not exist; check the bucket and key", s.Name(key))
		}
		if isUnreachable(err) {
			return nil, errs.BadInputf("cannot reach the S3 endpoint (%v); check --s3-endpoint-url / AWS_ENDPOINT_URL_S3 and your network", firstLine(err))
		}
		if isAccessDenied(err) {
			return nil, fmt.Errorf("reading %s: access denied (%v); the credentials need s3:GetObject on arn:aws:s3:::%s/*, and kms:Decrypt on the KMS key if the archive was written with --sse aws:kms (see 'dlqctl help iam')", s.Name(key), describeS3(err), s.Bucket)
		}
		return nil, fmt.Errorf("reading %s: %w", s.Name(key), describeS3(err))
	}
	return out.Body, nil
}

// Name is the object's s3:// URI.
func (s S3Source) Name(key string) string { return Location{Bucket: s.Bucket, Key: key}.String() }

// DirSource reads parts from a local directory: a part's file is the last
// element of its key, next to the manifest.
type DirSource struct{ Dir string }

// Open opens the file for key.
func (d DirSource) Open(_ context.Context, key string) (io.ReadCloser, error) {
	switch path.Base(key) {
	case ".", "..", "/":
		// A part key must name a file of the run: a manifest naming "..",
		// "." or a folder would otherwise open a directory (or, joined, a
		// path outside the run folder).
		return nil, errs.BadInputf("%s names part %q, which is not a file of the run; the manifest is damaged — re-download it or verify the run on S3", d.Dir, key)
	}
	f, err := os.Open(d.Name(key))
	if err == nil {
		if fi, serr := f.Stat(); serr == nil && fi.IsDir() {
			f.Close()
			return nil, errs.BadInputf("%s is a folder, not a part of the run; the manifest is damaged — re-download it or verify the run on S3", d.Name(key))
		}
	}
	if err != nil {
		return nil, errs.BadInputf("cannot read %s: %v; download the whole run folder next to its %s", d.Name(key), err, ManifestName)
	}
	return f, nil
}

// Name is the local path of key.
func (d DirSource) Name(key string) string { return filepath.Join(d.Dir, path.Base(key)) }

func statusCode(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func isNotFound(err error) bool {
	var nb *types.NoSuchBucket
	var nk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nb) || errors.As(err, &nk) || errors.As(err, &nf) {
		return true
	}
	switch apiCode(err) {
	case "NoSuchBucket", "NoSuchKey", "NotFound":
		return true
	}
	return statusCode(err) == http.StatusNotFound
}

func isUnreachable(err error) bool {
	m := err.Error()
	return strings.Contains(m, "connection refused") || strings.Contains(m, "no such host") || strings.Contains(m, "i/o timeout")
}

// describeS3 keeps S3 errors short: the code and message, not the SDK's
// operation chain.
func describeS3(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s (HTTP %d)", ae.ErrorCode(), ae.ErrorMessage(), statusCode(err))
	}
	return errors.New(firstLine(err))
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
