package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
)

// Local checks what every doctor run checks: the state directory and
// the tools the runbooks use.
func Local(ctx context.Context, rep *Report, dir, src string) {
	// State directory.
	rep.StateDir = dir
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	cgroup, _ := os.ReadFile("/proc/1/cgroup")
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	rep.Add(StateDirCheck(StateDirFacts{Path: dir, Source: src, MountInfo: string(mountinfo),
		Container: ContainerSigns(os.Getenv, exists, string(cgroup), string(mountinfo))}))

	// Tools.
	rep.Add(ToolCheck("jq", "the runbooks pipe dlqctl's JSON through jq", exec.LookPath, func(p string) string {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, p, "--version").Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}))
}

// RegionInUse is the region the SDK will use and where it comes from:
// --region, AWS_REGION, AWS_DEFAULT_REGION, else the profile's config.
func RegionInUse(ctx context.Context, flag, profile string) (string, string) {
	switch {
	case flag != "":
		return flag, "--region"
	case os.Getenv("AWS_REGION") != "":
		return os.Getenv("AWS_REGION"), "AWS_REGION"
	case os.Getenv("AWS_DEFAULT_REGION") != "":
		return os.Getenv("AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION"
	}
	name := profile
	if name == "" {
		name = "default"
	}
	sc, err := config.LoadSharedConfigProfile(ctx, name, func(o *config.LoadSharedConfigOptions) {
		// The files the SDK itself reads (LoadSharedConfigProfile alone
		// ignores these variables).
		if p := os.Getenv("AWS_CONFIG_FILE"); p != "" {
			o.ConfigFiles = []string{p}
		}
		if p := os.Getenv("AWS_SHARED_CREDENTIALS_FILE"); p != "" {
			o.CredentialsFiles = []string{p}
		}
	})
	if err == nil && sc.Region != "" {
		return sc.Region, "profile " + name + " (" + configFile() + ")"
	}
	return "", ""
}

func configFile() string {
	if p := os.Getenv("AWS_CONFIG_FILE"); p != "" {
		return p
	}
	return filepath.Join("~", ".aws", "config")
}

// StateDirSource says where the state directory came from (flag:
// --state-dir).
func StateDirSource(flag string) string {
	switch {
	case flag != "":
		return "--state-dir"
	case os.Getenv("DLQCTL_STATE_DIR") != "":
		return "DLQCTL_STATE_DIR"
	case os.Getenv("XDG_STATE_HOME") != "":
		return "XDG_STATE_HOME"
	}
	return "the default, ~/.local/state/dlqctl"
}

// EndpointOverrides lists the endpoint settings in effect: the flags
// given (in order) and every AWS_ENDPOINT_URL* variable of environ.
func EndpointOverrides(flags []Endpoint, environ []string) []Endpoint {
	var out []Endpoint
	for _, fl := range flags {
		if fl.Value != "" {
			out = append(out, fl)
		}
	}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_ENDPOINT_URL") && v != "" {
			out = append(out, Endpoint{Name: k, Value: v})
		}
	}
	return out
}
