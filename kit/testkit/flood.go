package testkit

import (
	"bytes"
	"net"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// StreamFlood opens n streams of method (a full gRPC method name such as
// /grpc.health.v1.Health/Watch) at once on one plaintext HTTP/2
// connection to addr, sending headers only and ignoring the server's
// SETTINGS, as a hostile peer would. It returns the server's
// SETTINGS_MAX_CONCURRENT_STREAMS (0 when it sets none) and the ids of the
// streams it refused with REFUSED_STREAM. Every stream's fate is known once
// the server answers a PING sent after them: it handles frames in order.
func StreamFlood(t TB, addr, method string, n int) (bound uint32, refused []uint32) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", addr},
		{":path", method}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for i := range n {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(1 + 2*i), BlockFragment: hdr.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	ping := [8]byte{'f', 'l', 'o', 'o', 'd'}
	if err := fr.WritePing(false, ping); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's answers to %d streams: %v", n, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok && !f.IsAck() {
				bound = v
			}
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame:
			if f.ErrCode == http2.ErrCodeRefusedStream {
				refused = append(refused, f.StreamID)
			}
		case *http2.PingFrame:
			if f.IsAck() && f.Data == ping {
				return bound, refused
			}
		}
	}
}
