package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is cairn's release version, set at build time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/cairn
var version = "dev"

func runVersion(_ context.Context, env *environment, args []string) error {
	fs := newFlagSet("version", "cairn version")
	positional, err := fs.parse(args, env.getenv, env.stdout)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		return usagef("unexpected argument %q", positional[0])
	}
	_, err = fmt.Fprintln(env.stdout, versionString())
	return err
}

// versionString is "cairn <version> (<go version> <os>/<arch>)", with the VCS revision the binary
// was built from when the Go toolchain recorded one.
func versionString() string {
	s := fmt.Sprintf("cairn %s (%s %s/%s", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, setting := range info.Settings {
			switch setting.Key {
			case "vcs.revision":
				rev = setting.Value
			case "vcs.modified":
				if setting.Value == "true" {
					modified = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			s += ", commit " + rev + modified
		}
	}
	return s + ")"
}
