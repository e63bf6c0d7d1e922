// Package grpcclient dials suite peers the one way they are all dialed: the
// 16 MiB message limit, keepalives that notice a vanished peer, and mutual
// TLS or (dev mode) plaintext.
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

	"github.com/switchboard-run/switchboard/kit/grpcserver"
)

// Dial returns a lazily connecting client for target ("host:port", or any
// grpc-go target such as "passthrough:///bufnet"). tlsCfg nil dials
// plaintext, for dev mode.
func Dial(target string, tlsCfg *tls.Config, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	opts := append([]grpc.DialOption{
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
	}, extra...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", target, err)
	}
	return conn, nil
}
