package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// callLog logs each finished call as the go-grpc-middleware logging
// interceptor does (the same message and fields), but builds the line only
// when the logger takes its level. The middleware builds its fields, a
// context and a reporter on every call before it knows; at the default
// level nothing but a server failure is logged, so that was a tenth of the
// allocations of a routed call spent on lines nobody wrote (docs/bench.md).
type callLog struct{ log *slog.Logger }

func (l callLog) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	l.finished(ctx, interceptors.NewServerCallMeta(info.FullMethod, nil, req), start, err)
	return resp, err
}

func (l callLog) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	l.finished(ss.Context(), interceptors.NewServerCallMeta(info.FullMethod, info, nil), start, err)
	return err
}

// finished writes the "finished call" line of a call that began at start,
// if the logger takes the level its outcome is logged at (levelFor).
func (l callLog) finished(ctx context.Context, c interceptors.CallMeta, start time.Time, err error) {
	if errors.Is(err, io.EOF) {
		err = nil
	}
	code := status.Code(err)
	lvl := slog.Level(levelFor(code))
	if !l.log.Enabled(ctx, lvl) {
		return
	}
	fields := []any{
		logging.SystemTag[0], logging.SystemTag[1],
		logging.ComponentFieldKey, logging.KindServerFieldValue,
		logging.ServiceFieldKey, c.Service,
		logging.MethodFieldKey, c.Method,
		logging.MethodTypeFieldKey, string(c.Typ),
	}
	if p, ok := peer.FromContext(ctx); ok {
		fields = append(fields, "peer.address", p.Addr.String())
	}
	fields = append(fields, "grpc.start_time", start.Format(time.RFC3339))
	if d, ok := ctx.Deadline(); ok {
		fields = append(fields, "grpc.request.deadline", d.Format(time.RFC3339))
	}
	fields = append(fields, "grpc.code", code.String())
	if err != nil {
		fields = append(fields, "grpc.error", err.Error())
	}
	ms := float32(time.Since(start).Nanoseconds()/1000) / 1000
	fields = append(fields, "grpc.time_ms", fmt.Sprintf("%v", ms))
	l.log.Log(ctx, lvl, "finished call", fields...)
}
