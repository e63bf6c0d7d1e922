package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
)

// parseReplicas reads certs suite --replicas: service=N pairs, each service
// one that serves (peers dial it by name, so each replica needs a name of
// its own besides the one it shares).
func parseReplicas(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, pair := range envflag.List(s) {
		name, count, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("--replicas %q: want service=N, e.g. mailbox=2", pair)
		}
		if !servesInSuite(name) {
			return nil, fmt.Errorf("--replicas %q: %q is no service the suite's peers dial (nats, registry, mailbox, bridge or gateway)", pair, name)
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > 9 {
			return nil, fmt.Errorf("--replicas %q: %q is not a count from 1 to 9", pair, count)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--replicas names %s twice", name)
		}
		out[name] = n
	}
	return out, nil
}

func servesInSuite(name string) bool {
	for _, l := range suiteLeaves {
		if l.name == name && l.serves && l.grade == "service" {
			return true
		}
	}
	return false
}

// mintReplicas mints l's leaf once per replica, into <name>-1 .. <name>-n.
// Each replica keeps a key of its own (one process's key is never another's,
// docs/security.md) but every one is CN=<name>: the identity peers
// authorize is the service's, not the replica's. Each names <name>-i, which
// its own healthcheck and the NATS routes dial, besides names (<name> and
// the --hosts), which peers dial through the network alias the replicas
// share.
func mintReplicas(dir string, l suiteLeaf, n int, names []string, validity time.Duration, o *certs.Owner, std IO) error {
	for i := 1; i <= n; i++ {
		replica := fmt.Sprintf("%s-%d", l.name, i)
		hosts := append([]string{replica}, names...)
		if err := mintLeafAt(dir, replica, l.name, l.grade, hosts, validity, o, std); err != nil {
			return err
		}
	}
	return nil
}
