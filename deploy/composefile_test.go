package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// composeCommand finds docker-compose v1, or the docker CLI's compose plugin.
// Neither needs a running engine for `config`. Without one, the test fails
// when CI=true (install Debian's docker-compose package) and is skipped
// otherwise.
func composeCommand(t *testing.T) []string {
	t.Helper()
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	if p, err := exec.LookPath("docker"); err == nil {
		if exec.Command(p, "compose", "version").Run() == nil {
			return []string{p, "compose"}
		}
	}
	msg := "neither docker-compose nor `docker compose` is installed (Debian: apt-get install docker-compose)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return nil
}

// TestComposeFilesValid runs `docker-compose config -q` on every Compose file
// and on the stack test's overrides, as users and scripts/compose-test.sh
// combine them.
func TestComposeFilesValid(t *testing.T) {
	cmd := composeCommand(t)
	for _, files := range [][]string{
		{"docker-compose.yml"},
		{"docker-compose.embedded.yml"},
		{"docker-compose.yml", "deploy/compose-test/stack.yml"},
		{"docker-compose.embedded.yml", "deploy/compose-test/embedded.yml"},
	} {
		args := append([]string{}, cmd[1:]...)
		for _, f := range files {
			args = append(args, "-f", f)
		}
		c := exec.Command(cmd[0], append(args, "config", "-q")...)
		c.Dir = ".."
		// What the overrides require from scripts/compose-test.sh.
		c.Env = append(os.Environ(),
			"COMPOSE_TEST_BASE_IMAGE=base", "COMPOSE_TEST_PROMETHEUS_IMAGE=prometheus",
			"COMPOSE_TEST_NODE_EXPORTER_IMAGE=node-exporter", "COMPOSE_TEST_READER_PORT=19090")
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("%s config -q on %s: %v\n%s", strings.Join(cmd, " "), strings.Join(files, " + "), err, out)
		}
	}
}
