// Package grpcclient dials suite peers the one way they are all dialed: the
// 16 MiB message limit, keepalives that notice a vanished peer, mutual TLS
// or (dev mode) plaintext, and calls spread over every replica a target
// names, so that losing one replica loses no caller.
package grpcclient

import (
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
)

// roundRobin keeps a connection to every address the target resolves to and
// spreads calls over the ready ones: a replica that dies leaves the others
// ready, so the next call (a host's next Follow) lands on a live replica
// without a connect of its own. One address behaves as pick_first would.
const roundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Dial returns a lazily connecting client for target: "host:port" (a DNS
// name resolving to several addresses reaches them all), several
// "host:port" separated by commas (the replicas of one service), or any
// grpc-go target such as "passthrough:///bufnet" or "dns:///name:port".
// tlsCfg nil dials plaintext, for dev mode.
func Dial(target string, tlsCfg *tls.Config, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(grpcserver.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(grpcserver.MaxMessageBytes),
		),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 20 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		// A peer that restarts is redialed within seconds: grpc-go's default
		// backoff grows to two minutes, which would leave a gateway refusing
		// long after its mailbox came back.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second,
		}, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultServiceConfig(roundRobin),
	}
	resolved, listOpt, err := replicas(target)
	if err != nil {
		return nil, err
	}
	if listOpt != nil {
		opts = append(opts, listOpt)
	}
	conn, err := grpc.NewClient(resolved, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", target, err)
	}
	return conn, nil
}
