package natsserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// StartCluster runs n nodes of one JetStream cluster on loopback ports,
// each with its storage under dir/<name>-<i>, and returns them once every
// node accepts connections: the tests' three-node cluster. Every node is
// told every other node's route address, as a configured cluster is, so
// JetStream knows the cluster's size from the start.
func StartCluster(dir, name string, n int, log *slog.Logger) ([]*Server, error) {
	if n < 1 {
		return nil, errors.New("natsserver: a cluster has at least one node")
	}
	// The route ports are picked before the nodes bind them; another
	// process may take one in between, and then the cluster is tried
	// again on other ports.
	var err error
	for range clusterTries {
		var fresh []string // a failed try's state names peers that never formed
		for i := range n {
			if d := nodeDir(dir, name, i); !exists(d) {
				fresh = append(fresh, d)
			}
		}
		var nodes []*Server
		if nodes, err = startCluster(dir, name, n, log); !errors.Is(err, ErrListen) {
			return nodes, err
		}
		for _, d := range fresh {
			os.RemoveAll(d)
		}
	}
	return nil, err
}

func nodeName(name string, i int) string { return fmt.Sprintf("%s-%d", name, i+1) }

func nodeDir(dir, name string, i int) string { return filepath.Join(dir, nodeName(name, i)) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// clusterTries is how many sets of route ports StartCluster tries.
const clusterTries = 3

func startCluster(dir, name string, n int, log *slog.Logger) ([]*Server, error) {
	routes, err := freeAddrs(n)
	if err != nil {
		return nil, err
	}
	nodes := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	// The nodes start together: each waits for a quorum of the others
	// before JetStream is ready.
	for i := range n {
		wg.Go(func() {
			node := nodeName(name, i)
			nodes[i], errs[i] = Start(Options{Dir: nodeDir(dir, name, i), Listen: "127.0.0.1:0", Name: node, Log: log,
				Cluster: &Cluster{Name: name, Listen: routes[i], Routes: slices.Delete(slices.Clone(routes), i, i+1)}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range nodes {
			if s != nil {
				s.Shutdown()
			}
		}
		return nil, err
	}
	if err := waitMetaLeader(nodes); err != nil {
		for _, s := range nodes {
			s.Shutdown()
		}
		return nil, err
	}
	return nodes, nil
}

// waitMetaLeader waits until the cluster has elected its JetStream meta
// leader and every node knows every peer: before that, creating a stream
// fails with "JetStream system temporarily unavailable".
func waitMetaLeader(nodes []*Server) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		leader, current := false, true
		for _, s := range nodes {
			// Only the leader answers with the peers it knows.
			leader = leader || (s.ns.JetStreamIsLeader() && len(s.ns.JetStreamClusterPeers()) == len(nodes))
			current = current && s.ns.JetStreamIsCurrent()
		}
		if leader && current {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("the %d-node NATS cluster elected no JetStream leader within %v", len(nodes), startTimeout)
}

// freeAddrs finds n free loopback ports. Another process could take one
// before the node binds it; the node then fails to start and says so.
func freeAddrs(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port for a NATS route: %w", err)
		}
		out = append(out, l.Addr().String())
		defer l.Close()
	}
	return out, nil
}
