// Package deploy holds what the compose deployment mounts (the example tool
// host's tools file, the bridge's mcpServers file), the example tool
// switchboard-echo, and the tests that check docker-compose.yml and the
// Dockerfile against the real switchboard binary: there is no Docker engine
// where the suite is tested, so the files are checked, not the containers.
package deploy
