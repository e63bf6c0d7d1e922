// Command petstore is an example HTTP API for the Switchboard bridge's
// OpenAPI mounts (see docs/connectors.md): a pet store kept in memory,
// described by openapi.yaml, which it serves at /openapi.yaml beside the
// API under /v1 (the document's relative server URL).
//
//	go build -o bin/petstore ./examples/petstore
//	bin/petstore --listen 127.0.0.1:8090 &
//	switchboard openapi mount pets --spec http://127.0.0.1:8090/openapi.yaml
//
// The document has an operation of each kind the bridge sends (path,
// query, header and JSON body parameters, an error status, a response
// longer than a capture takes) and two it refuses (a form body, a
// callback). Given --api-key, every /v1 request must carry that key in
// X-Api-Key, as the document's security scheme says.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8090", "the address to serve on")
	key := flag.String("api-key", "", "the key every /v1 request must carry in X-Api-Key (default: none asked)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *listen, *key); err != nil {
		fmt.Fprintln(os.Stderr, "petstore:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, addr, key string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newStore(key).handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "petstore: serving http://%s/v1, its document at http://%s/openapi.yaml\n", lis.Addr(), lis.Addr())
	if err := srv.Serve(lis); err != http.ErrServerClosed {
		return err
	}
	return nil
}
