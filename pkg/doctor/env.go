package doctor

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Endpoint is one endpoint setting in effect.
type Endpoint struct {
	Name  string // "--endpoint-url", "AWS_ENDPOINT_URL_SQS" …
	Value string
}

// EndpointKind classifies an endpoint URL: "local" (loopback, a private
// address or a name like localhost/localstack), "aws" (one of AWS's
// hosts) or "other".
func EndpointKind(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "other"
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, d := range []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".c2s.ic.gov", ".sc2s.sgov.gov"} {
		if strings.HasSuffix(h, d) {
			return "aws"
		}
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.Contains(h, "localstack") || h == "host.docker.internal" ||
		strings.Contains(h, "moto") || strings.Contains(h, "elasticmq") || strings.Contains(h, "minio") {
		return "local"
	}
	if ip := net.ParseIP(h); ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()) {
		return "local"
	}
	return "other"
}

// Credentials describes the credentials in use without revealing them.
type Credentials struct {
	// Source is the SDK's provider name ("EnvConfigCredentials",
	// "SSOProvider", "AssumeRoleProvider", "EC2RoleProvider" …).
	Source string
	// AccessKeyID is used only to tell real from placeholder keys; it is
	// never printed.
	AccessKeyID string
	Session     bool // a session token is present
}

var awsKeyID = regexp.MustCompile(`^(AKIA|ASIA)[A-Z0-9]{16}$`)

// Look says whether credentials look like a local stack's ("local"),
// real AWS ones ("real") or cannot be told ("unknown").
func (c Credentials) Look() string {
	id := c.AccessKeyID
	switch {
	case id == "":
		return "unknown"
	case awsKeyID.MatchString(id) && !strings.HasSuffix(id, "EXAMPLE"):
		return "real"
	case strings.Contains(c.Source, "SSO") || strings.Contains(c.Source, "AssumeRole") || strings.Contains(c.Source, "EC2Role") ||
		strings.Contains(c.Source, "WebIdentity") || strings.Contains(c.Source, "ECS") || strings.Contains(c.Source, "Process"):
		return "real"
	}
	return "local"
}

// Kind says what kind of key: long-term (AKIA), temporary (ASIA), or a
// placeholder. Safe to print.
func (c Credentials) Kind() string {
	switch {
	case strings.HasPrefix(c.AccessKeyID, "AKIA") && c.Look() == "real":
		return "long-term access key"
	case strings.HasPrefix(c.AccessKeyID, "ASIA") && c.Look() == "real":
		return "temporary session credentials"
	case c.Look() == "local":
		return "placeholder credentials of a local stack"
	}
	return "credentials"
}

// EnvironmentCheck compares where each service points with the
// credentials in use. sqsEndpoint/s3Endpoint are the ones in effect (""
// for AWS's own); overrides are every endpoint variable and flag set;
// stackVars are other local-stack variables present in the environment.
func EnvironmentCheck(sqsEndpoint, s3Endpoint string, overrides []Endpoint, creds Credentials, credsKnown bool) Check {
	sqsKind, s3Kind := "aws", "aws"
	if sqsEndpoint != "" {
		sqsKind = EndpointKind(sqsEndpoint)
	}
	if s3Endpoint != "" {
		s3Kind = EndpointKind(s3Endpoint)
	}
	var names []string
	var desc []string
	for _, o := range overrides {
		names = append(names, o.Name)
		desc = append(desc, fmt.Sprintf("%s=%s (%s)", o.Name, o.Value, EndpointKind(o.Value)))
	}
	where := func(kind, ep string) string {
		if ep == "" {
			return "AWS's own endpoint"
		}
		return ep + " (" + kind + ")"
	}
	c := Check{Name: "endpoints", Status: OK}
	c.Detail = fmt.Sprintf("SQS: %s; S3: %s", where(sqsKind, sqsEndpoint), where(s3Kind, s3Endpoint))
	if len(desc) > 0 {
		c.Detail += "; overrides: " + strings.Join(desc, ", ")
	}
	unsetEnv := func() string {
		var env []string
		for _, n := range names {
			if !strings.HasPrefix(n, "-") {
				env = append(env, n)
			}
		}
		if len(env) == 0 {
			return "drop the --*endpoint-url flags"
		}
		return "unset " + strings.Join(env, " ")
	}
	look := creds.Look()
	switch {
	case credsKnown && sqsKind == "local" && look == "real":
		c.Status = Fail
		c.Detail = "REAL-LOOKING CREDENTIALS (" + creds.Kind() + ", " + creds.Source + ") BUT SQS POINTS AT A LOCAL STACK: " + c.Detail
		c.Fix = "to work on AWS: " + unsetEnv() + " (a leftover of eval \"$(scripts/stack.sh env)\"?); to work on the local stack, use its credentials"
	case credsKnown && sqsKind == "aws" && look == "local":
		c.Status = Fail
		c.Detail = "LOCAL-STACK CREDENTIALS (" + creds.Source + ") BUT SQS IS AWS's: every call will be refused (or, with a working key elsewhere, hit a real account); " + c.Detail
		c.Fix = "unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN and use your AWS profile (export AWS_PROFILE=… or --profile), or point SQS back at the local stack"
	case sqsKind != s3Kind && !(sqsKind == "aws" && s3Kind == "other") && !(sqsKind == "other" && s3Kind == "aws"):
		c.Status = Warn
		c.Detail = "SQS and S3 point at different worlds: " + c.Detail
		c.Fix = "an archive or restore would read one account's queues and another place's bucket; " + unsetEnv() + " or set both"
	}
	return c
}

// StateDirFacts is what the state directory check looks at.
type StateDirFacts struct {
	Path   string
	Source string // "--state-dir", "DLQCTL_STATE_DIR", "XDG_STATE_HOME", "default (~/.local/state/dlqctl)"
	// MountInfo is /proc/self/mountinfo ("" when unknown: not Linux).
	MountInfo string
	// Container lists the signs that this is a container or a pod.
	Container []string
}

// ContainerSigns lists what says this process runs in a container or a
// Kubernetes pod: KUBERNETES_SERVICE_HOST, /.dockerenv,
// /run/.containerenv, a container runtime in /proc/1/cgroup, an overlay
// root filesystem.
func ContainerSigns(getenv func(string) string, exists func(string) bool, cgroup, mountinfo string) []string {
	var signs []string
	if getenv("KUBERNETES_SERVICE_HOST") != "" {
		signs = append(signs, "Kubernetes pod (KUBERNETES_SERVICE_HOST is set)")
	}
	if exists("/.dockerenv") {
		signs = append(signs, "/.dockerenv")
	}
	if exists("/run/.containerenv") {
		signs = append(signs, "/run/.containerenv (podman)")
	}
	for _, rt := range []string{"kubepods", "docker", "containerd", "libpod", "lxc", "ecs"} {
		if strings.Contains(cgroup, rt) {
			signs = append(signs, "cgroup "+rt)
			break
		}
	}
	if fsType("/", mountinfo) == "overlay" {
		signs = append(signs, "overlay root filesystem")
	}
	return signs
}

// fsType returns the filesystem type of the mount holding path (the
// longest mount point that prefixes it) from /proc/self/mountinfo text.
func fsType(path, mountinfo string) string {
	best, typ := "", ""
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional…] - fstype source superopts
		f := strings.Fields(sc.Text())
		if len(f) < 7 {
			continue
		}
		mp := unescapeMount(f[4])
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			continue
		}
		if (path == mp || mp == "/" || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, typ = mp, f[sep+1]
		}
	}
	return typ
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// StateDirCheck says whether run journals can be written to the state
// directory and whether they will still be there for `redrive resume`
// after the process, the container or the pod is gone. It writes and
// removes one probe file (and creates the directory when it is missing,
// as any run would).
func StateDirCheck(st StateDirFacts) Check {
	c := Check{Name: "state-dir", Status: OK}
	path := st.Path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		c.Status = Fail
		c.Detail = fmt.Sprintf("%s (%s) cannot be created: %v", path, st.Source, err)
		c.Fix = "pass --state-dir DIR (or export DLQCTL_STATE_DIR) naming a writable directory on a persistent volume"
		return c
	}
	f, err := os.CreateTemp(path, ".doctor-probe-*")
	if err != nil {
		c.Status = Fail
		c.Detail = fmt.Sprintf("%s (%s) is not writable: %v", path, st.Source, err)
		c.Fix = "pass --state-dir DIR (or export DLQCTL_STATE_DIR) naming a writable directory on a persistent volume"
		return c
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.Status = Warn
		c.Detail = fmt.Sprintf("%s: the probe file %s could not be removed: %v", path, name, err)
		return c
	}
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	typ := fsType(real, st.MountInfo)
	c.Detail = fmt.Sprintf("%s (%s) is writable", path, st.Source)
	if typ != "" {
		c.Detail += ", on " + typ
	}
	fix := "run journals (for redrive resume, restore resume and runs) must outlive this process: pass --state-dir (or export DLQCTL_STATE_DIR) on a persistent volume, e.g. a PersistentVolumeClaim mounted in the pod, and use the same directory when you resume"
	switch {
	case typ == "tmpfs" || typ == "ramfs":
		c.Status = Warn
		c.Detail += ": memory-backed, lost at reboot or when the container stops"
		c.Fix = fix
	case len(st.Container) > 0 && (typ == "overlay" || typ == "" || typ == "aufs"):
		c.Status = Warn
		c.Detail += fmt.Sprintf(": in a container (%s), on its own writable layer, which is lost with the container or pod", strings.Join(st.Container, ", "))
		c.Fix = fix
	case len(st.Container) > 0:
		c.Detail += fmt.Sprintf(" (a mounted volume inside a container: %s); make sure it outlives the pod", strings.Join(st.Container, ", "))
	}
	return c
}

// ToolCheck reports whether a tool the runbooks use is on PATH.
func ToolCheck(name, usedFor string, lookPath func(string) (string, error), version func(string) string) Check {
	c := Check{Name: "tool " + name, Status: OK}
	p, err := lookPath(name)
	if err != nil {
		c.Status = Warn
		c.Detail = fmt.Sprintf("%s is not on PATH; %s", name, usedFor)
		c.Fix = "install " + name + " (apt-get install " + name + ", brew install " + name + ", or the static binary from its releases)"
		return c
	}
	c.Detail = p
	if v := version(p); v != "" {
		c.Detail += " (" + v + ")"
	}
	return c
}
