//go:build linux

package serverless

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestImage is the image the container tests run: busybox alone, imported by the test itself
// (no registry).
const TestImage = "localhost/cairn-test:1"

var containerSetup struct {
	once sync.Once
	cli  string
	err  string
}

// ContainerCLI is the container runtime's CLI the tests use (podman, which needs no daemon), with
// TestImage imported and a container known to run. Where the runtime's defaults cannot run a
// container (a sandbox without the capability to raise rlimits, or with hybrid cgroups), it is
// given a configuration that can, through CONTAINERS_CONF, which every later run inherits. Without
// podman the tests are skipped, with the reason, except under CI=true, where they fail.
func ContainerCLI(t testing.TB) string {
	t.Helper()
	containerSetup.once.Do(func() { containerSetup.cli, containerSetup.err = setUpContainers() })
	if containerSetup.err != "" && os.Getenv("CI") != "true" {
		t.Skipf("the container tests need podman and a static busybox (CI installs them): %s", containerSetup.err)
	}
	require.Empty(t, containerSetup.err, "the container tests need podman and a static busybox (CI installs them)")
	return containerSetup.cli
}

func setUpContainers() (string, string) {
	cli, err := exec.LookPath("podman")
	if err != nil {
		return "", "no podman on PATH"
	}
	if exec.Command(cli, "image", "exists", TestImage).Run() != nil {
		if msg := importTestImage(cli); msg != "" {
			return "", msg
		}
	}
	probe := func() string {
		out, err := exec.Command(cli, "run", "--rm", "--network=none", TestImage, "/bin/true").CombinedOutput()
		if err != nil {
			return strings.TrimSpace(string(out))
		}
		return ""
	}
	first := probe()
	if first == "" {
		return cli, ""
	}
	dir, err := os.MkdirTemp("", "cairn-containers-")
	if err != nil {
		return "", err.Error()
	}
	conf := filepath.Join(dir, "containers.conf")
	limits := "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n[engine]\nruntime = \"runc\"\n"
	if err := os.WriteFile(conf, []byte(limits), 0o644); err != nil {
		return "", err.Error()
	}
	_ = os.Setenv("CONTAINERS_CONF", conf)
	if second := probe(); second != "" {
		return "", "podman cannot run a container: " + first + "; with runc and lower rlimits: " + second
	}
	return cli, ""
}

// importTestImage builds a root filesystem of a static busybox and its applets and imports it.
func importTestImage(cli string) string {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return "no busybox on PATH (Debian's busybox-static)"
	}
	f, err := elf.Open(bb)
	if err != nil {
		return "busybox is not an ELF file: " + err.Error()
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			_ = f.Close()
			return bb + " is linked dynamically: the image needs a static busybox (busybox-static)"
		}
	}
	_ = f.Close()
	bin, err := os.ReadFile(bb)
	if err != nil {
		return err.Error()
	}
	applets, err := exec.Command(bb, "--list").Output()
	if err != nil {
		return "busybox --list: " + err.Error()
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, d := range []string{"bin/", "tmp/", "proc/", "sys/", "dev/", "etc/"} {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: now})
	}
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin)), ModTime: now})
	_, _ = tw.Write(bin)
	for _, a := range strings.Fields(string(applets)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: now})
		}
	}
	if err := tw.Close(); err != nil {
		return err.Error()
	}
	cmd := exec.Command(cli, "import", "--quiet", "-", TestImage)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return "podman import: " + strings.TrimSpace(string(out))
	}
	return ""
}

// ContainerState is a container's state as the CLI reports it ("running", "exited"), or "" when
// there is no such container.
func ContainerState(t testing.TB, cli, name string) string {
	out, err := exec.Command(cli, "inspect", "--format", "{{.State.Status}}", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// RemoveContainer removes a container a test left, if any.
func RemoveContainer(cli, name string) { _ = exec.Command(cli, "rm", "-f", name).Run() }

// The command line of a container follows the document: a command through /bin/sh -c with the
// arguments as $1..., the image's own command with the arguments otherwise, the ports and volumes
// by the host's side, the environment through a file, and podman told to keep the node's proxy
// variables out.
func TestContainerArgv(t *testing.T) {
	cs := &containerSpec{cli: "/usr/bin/docker", pull: "always", cleanup: "always", command: "echo $1",
		ports: []string{"127.0.0.1:8080:80/tcp"}, volumes: []string{"/srv/in:/in"}}
	require.Equal(t, []string{"/usr/bin/docker", "run", "--quiet", "--name", "box", "--pull=always", "--label", "io.cairnflow.workflow=7", "--rm",
		"--interactive", "--env-file", "/tmp/env", "--publish", "127.0.0.1:8080:80/tcp", "--volume", "/srv/in:/in",
		"--entrypoint", "/bin/sh", "alpine", "-c", "echo $1", "sh", "a", "b"},
		containerArgv(cs, "alpine", "box", "7", "/tmp/env", time.Time{}, true, []string{"a", "b"}))
	cs = &containerSpec{cli: "podman", pull: "missing", cleanup: "eventually"}
	at := time.Unix(1800000000, 0)
	require.Equal(t, []string{"podman", "run", "--quiet", "--name", "box", "--pull=missing", "--label", "io.cairnflow.workflow=7",
		"--label", "io.cairnflow.remove-after=1800000000", "--http-proxy=false", "alpine", "a"},
		containerArgv(cs, "alpine", "box", "7", "", at, false, []string{"a"}))
}

// A sweep removes the containers cairn labelled to be removed by a time that passed, and keeps
// those whose time is to come.
func TestContainerSweep(t *testing.T) {
	cli := ContainerCLI(t)
	now := time.Now()
	for name, at := range map[string]time.Time{"cairn-sweep-past": now.Add(-time.Minute), "cairn-sweep-future": now.Add(time.Hour)} {
		RemoveContainer(cli, name)
		t.Cleanup(func() { RemoveContainer(cli, name) })
		out, err := exec.Command(cli, "create", "--name", name, "--label", labelRemoveAfter+"="+strconv.FormatInt(at.Unix(), 10), TestImage, "true").CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	sweepContainers(cli, now)
	require.Empty(t, ContainerState(t, cli, "cairn-sweep-past"))
	require.NotEmpty(t, ContainerState(t, cli, "cairn-sweep-future"))
}
