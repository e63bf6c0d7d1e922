package testkit

import (
	"os"
	"strings"
)

// Engine is the container engine and compose CLI that `make compose-test`
// found or installed (deploy/engine.sh), and the image it built there.
type Engine struct {
	CLI     string   // docker or podman
	Compose []string // the compose command line: docker compose, or bin/docker-compose
	Image   string   // the suite's image, built by Dockerfile.prebuilt
}

// Skipper is a TB that can skip: a *testing.T.
type Skipper interface {
	TB
	Skip(args ...any)
}

// ContainerEngine is the engine deploy/engine.sh names in the environment.
// Without one (`make test`, `go test`) the test is skipped, saying how to
// run it.
func ContainerEngine(t Skipper) Engine {
	t.Helper()
	cli, compose := os.Getenv("SWITCHBOARD_ENGINE"), os.Getenv("SWITCHBOARD_COMPOSE")
	if cli == "" || compose == "" {
		t.Skip("no container engine named: `make compose-test` finds one (or installs podman, as root) and runs this test on it (docs/deploy.md, How the files are tested)")
	}
	image := os.Getenv("SWITCHBOARD_IMAGE")
	if image == "" {
		image = "switchboard:dev"
	}
	return Engine{CLI: cli, Compose: strings.Fields(compose), Image: image}
}
