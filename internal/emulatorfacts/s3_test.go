package emulatorfacts

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/dlqctl/dlqctl/internal/testenv"
)

// TestS3Behaviour: what dlqctl's archive relies on (explicit SHA256
// checksums read back by HeadObject, create-only writes with
// If-None-Match: *) on versitygw (the local stack's S3) and moto.
func TestS3Behaviour(t *testing.T) {
	testenv.ForEachServer(t, func(t *testing.T, e testenv.Env) {
		c := e.S3(t)
		ctx := t.Context()
		bucket := testenv.BucketName(t, "facts")
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		expect(t, e, "CreateBucket of an existing own bucket (us-east-1)", code(err), map[testenv.Kind]any{local: "BucketAlreadyOwnedByYou", moto: ""})

		data := []byte(strings.Repeat("line\n", 100))
		sum := sha256.Sum256(data)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a"), Body: bytes.NewReader(data), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256}); err != nil {
			t.Fatal(err)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("a"), ChecksumMode: s3types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, e, "HeadObject ChecksumSHA256 equals the uploaded SHA256", aws.ToString(head.ChecksumSHA256) == base64.StdEncoding.EncodeToString(sum[:]), both(true))

		// Default SDK settings (no algorithm): which checksum comes back?
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("b"), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("b"), ChecksumMode: s3types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		kinds := []string{}
		for name, v := range map[string]*string{"CRC32": head.ChecksumCRC32, "CRC32C": head.ChecksumCRC32C, "CRC64NVME": head.ChecksumCRC64NVME, "SHA1": head.ChecksumSHA1, "SHA256": head.ChecksumSHA256} {
			if aws.ToString(v) != "" {
				kinds = append(kinds, name)
			}
		}
		expect(t, e, "checksums HeadObject returns for a PutObject with SDK defaults", kinds, map[testenv.Kind]any{local: []string{"CRC64NVME"}, moto: []string{}})

		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("new"), Body: bytes.NewReader(data), IfNoneMatch: aws.String("*")})
		expect(t, e, "PutObject If-None-Match: * on a new key", code(err), both(""))
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a"), Body: strings.NewReader("overwrite"), IfNoneMatch: aws.String("*")})
		expect(t, e, "PutObject If-None-Match: * on an existing key", code(err), both("PreconditionFailed"))
	})
}
