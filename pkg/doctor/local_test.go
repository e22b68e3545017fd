package doctor

import (
	"slices"
	"testing"
)

func TestEndpointOverrides(t *testing.T) {
	got := EndpointOverrides(
		[]Endpoint{{Name: "--endpoint-url", Value: "http://127.0.0.1:4566"}, {Name: "--sqs-endpoint-url"}, {Name: "--s3-endpoint-url", Value: "http://s3.local"}},
		[]string{"HOME=/root", "AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9324", "AWS_ENDPOINT_URL_S3=", "AWS_REGION=eu-west-1", "AWS_ENDPOINT_URL=https://x"})
	want := []Endpoint{
		{Name: "--endpoint-url", Value: "http://127.0.0.1:4566"}, {Name: "--s3-endpoint-url", Value: "http://s3.local"},
		{Name: "AWS_ENDPOINT_URL_SQS", Value: "http://127.0.0.1:9324"}, {Name: "AWS_ENDPOINT_URL", Value: "https://x"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("EndpointOverrides = %v, want %v", got, want)
	}
}

func TestStateDirSource(t *testing.T) {
	t.Setenv("DLQCTL_STATE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	if got := StateDirSource("/x"); got != "--state-dir" {
		t.Errorf("with the flag: %q", got)
	}
	if got := StateDirSource(""); got != "the default, ~/.local/state/dlqctl" {
		t.Errorf("nothing set: %q", got)
	}
	t.Setenv("XDG_STATE_HOME", "/xdg")
	if got := StateDirSource(""); got != "XDG_STATE_HOME" {
		t.Errorf("XDG_STATE_HOME: %q", got)
	}
	t.Setenv("DLQCTL_STATE_DIR", "/state")
	if got := StateDirSource(""); got != "DLQCTL_STATE_DIR" {
		t.Errorf("DLQCTL_STATE_DIR over XDG_STATE_HOME: %q", got)
	}
}

func TestRegionInUseOrder(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_DEFAULT_REGION", "us-east-2")
	if r, src := RegionInUse(t.Context(), "ap-south-1", ""); r != "ap-south-1" || src != "--region" {
		t.Errorf("flag: %s from %s", r, src)
	}
	if r, src := RegionInUse(t.Context(), "", ""); r != "eu-west-1" || src != "AWS_REGION" {
		t.Errorf("AWS_REGION: %s from %s", r, src)
	}
	t.Setenv("AWS_REGION", "")
	if r, src := RegionInUse(t.Context(), "", ""); r != "us-east-2" || src != "AWS_DEFAULT_REGION" {
		t.Errorf("AWS_DEFAULT_REGION: %s from %s", r, src)
	}
}
