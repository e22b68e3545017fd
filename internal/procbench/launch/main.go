// Command launch runs one program for the whole-process benchmarks in
// internal/procbench and reports its peak RSS:
//
//	launch -rusage FILE -- PROGRAM ARGS...
//
// runs PROGRAM with this process's stdin, stdout, stderr and environment,
// waits for it, writes {"maxrss_kb":…,"wall_s":…,"cpu_s":…,"exit":…} to FILE and
// exits with PROGRAM's exit code (1 if a signal ended it).
//
// It exists because a Go test process cannot read a child's peak RSS from
// wait4: Go starts children with CLONE_VM|CLONE_VFORK, and Linux carries the
// parent's RSS high-water mark into the child's ru_maxrss at exec, so the
// child reports at least the test process's peak. This launcher imports only
// the standard library and stays at about 2–3 MB, so that floor is far below
// what the programs it runs use (check: `launch -rusage f -- /bin/true`).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	out := flag.String("rusage", "", "write the program's peak RSS, wall and CPU time and exit code (JSON) to this file")
	flag.Parse()
	argv := flag.Args()
	if *out == "" || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: launch -rusage FILE -- PROGRAM ARGS...")
		os.Exit(2)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "launch:", err)
		os.Exit(1)
	}
	var maxrss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxrss = ru.Maxrss // KiB on Linux
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	b, _ := json.Marshal(map[string]any{"maxrss_kb": maxrss, "wall_s": wall.Seconds(), "cpu_s": cpu.Seconds(), "exit": code})
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "launch:", err)
		os.Exit(1)
	}
	if code < 0 {
		code = 1
	}
	os.Exit(code)
}
