package bridge

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestMountRefusals(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	ok := stdioServer("/bin/true")
	tests := []struct {
		name string
		ctx  context.Context
		req  *bridgev1.MountRequest
		code codes.Code
		msg  string
	}{
		{"a bad client name", admin, &bridgev1.MountRequest{Client: "Files_1", Config: ok},
			codes.InvalidArgument, `mount "Files_1": client name "Files_1" is not 1–32 chars of [a-z0-9-] starting with a letter or digit`},
		{"no config", admin, &bridgev1.MountRequest{Client: "a"},
			codes.InvalidArgument, `mount "a": no config: say how to reach the server`},
		{"an empty command", admin, &bridgev1.MountRequest{Client: "a", Config: stdioServer(" ")},
			codes.InvalidArgument, `mount "a": the command is empty: name the program that runs the server`},
		{"a url that is not http", admin, &bridgev1.MountRequest{Client: "a", Config: httpServer("ftp://h/")},
			codes.InvalidArgument, `mount "a": url "ftp://h/" is not an http:// or https:// URL with a host`},
		{"a negative bound", admin, &bridgev1.MountRequest{Client: "a", Config: &bridgev1.ServerConfig{Transport: ok.Transport, MaxTools: -1}},
			codes.InvalidArgument, `mount "a": max_tools is -1; want 0 (the default) or more`},
		{"a plugin manifest without a command", admin, &bridgev1.MountRequest{Client: "a", Config: &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Plugin{Plugin: &bridgev1.PluginManifest{}}}},
			codes.InvalidArgument, `mount "a": the manifest's command is empty: name the program that runs the backend`},
		{"a host may not mount", testkit.As("laptop", identity.Host), &bridgev1.MountRequest{Client: "a", Config: ok},
			codes.PermissionDenied, `"laptop" is a host and may not call BridgeService.Mount`},
		{"a driver may not mount", driver, &bridgev1.MountRequest{Client: "a", Config: ok},
			codes.PermissionDenied, `"agent" is a driver and may not call BridgeService.Mount`},
		{"a service may not mount", testkit.As("gateway", identity.Service), &bridgev1.MountRequest{Client: "a", Config: ok},
			codes.PermissionDenied, `"gateway" is a service and may not call BridgeService.Mount`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.bridge.Mount(tt.ctx, tt.req)
			testkit.Refused(t, err, tt.code, tt.msg)
		})
	}
	_, err := s.bridge.Unmount(admin, &bridgev1.UnmountRequest{Client: "ghost"})
	testkit.Refused(t, err, codes.NotFound, `no MCP server is mounted as "ghost"`)
	_, err = s.bridge.Unmount(driver, &bridgev1.UnmountRequest{Client: "ghost"})
	testkit.Refused(t, err, codes.PermissionDenied, `"agent" is a driver and may not call BridgeService.Unmount`)
	if _, err := s.bridge.ListServers(driver, &bridgev1.ListServersRequest{}); err != nil {
		t.Fatalf("a driver lists the servers: %v", err)
	}
	_, err = s.bridge.ListServers(testkit.As("laptop", identity.Host), &bridgev1.ListServersRequest{})
	testkit.Refused(t, err, codes.PermissionDenied, `"laptop" is a host and may not call BridgeService.ListServers`)
	if res, _ := s.bridge.ListServers(admin, &bridgev1.ListServersRequest{}); len(res.GetServers()) != 0 {
		t.Errorf("refused mounts left rows: %v", res.GetServers())
	}
}

func TestMountReplaceAndUnmount(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	bin := testkit.Tool(t, "everything-server")
	s.mount(t, "conf", &bridgev1.ServerConfig{Transport: stdioServer(bin).Transport, AllowTools: []string{"test_simple_text"}})
	if got := s.advertised(t, "conf"); len(got) != 1 || !got["test_simple_text"] {
		t.Fatalf("advertised %v, want only the allowed tool", got)
	}
	oldPID := s.pid(t, "conf")

	// Mounting the name again replaces it: the new config's set is advertised.
	st := s.mount(t, "conf", &bridgev1.ServerConfig{Transport: stdioServer(bin).Transport, AllowTools: []string{"test_simple_text", "test_image_content"}})
	if st.GetState() != bridgev1.State_STATE_RUNNING || st.GetToolCount() != 2 {
		t.Fatalf("after replacing: %v", st)
	}
	if got := s.advertised(t, "conf"); len(got) != 2 {
		t.Errorf("advertised %v after replacing", got)
	}
	if s.pid(t, "conf") == oldPID {
		t.Error("the old process still serves after a replacement")
	}
	s.mount(t, "other", stdioServer(testkit.Tool(t, "everything")))
	res, err := s.bridge.ListServers(admin, &bridgev1.ListServersRequest{})
	if err != nil || len(res.GetServers()) != 2 || res.GetServers()[0].GetClient() != "conf" || res.GetServers()[1].GetClient() != "other" {
		t.Fatalf("ListServers = %v, %v; want conf then other", res, err)
	}

	pid := s.pid(t, "conf")
	un, err := s.bridge.Unmount(admin, &bridgev1.UnmountRequest{Client: "conf"})
	if err != nil {
		t.Fatal(err)
	}
	if un.GetServer().GetState() != bridgev1.State_STATE_STOPPED || un.GetServer().GetToolCount() != 0 {
		t.Errorf("Unmount's status = %v", un.GetServer())
	}
	if got := s.advertised(t, "conf"); len(got) != 0 {
		t.Errorf("still advertised after Unmount: %v", got)
	}
	if err := syscallKill0(pid); err == nil {
		t.Errorf("process %d is still alive after Unmount", pid)
	}
	if s.row(t, "conf") != nil {
		t.Error("an unmounted server is still listed")
	}
}

func TestMountConfigMountsEveryServerOfAFile(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	file := writeFile(t, "mcp.json", `{"mcpServers":{
		"conf": {"command": "`+testkit.Tool(t, "everything-server")+`", "maxTools": 3},
		"example": {"type": "stdio", "command": "`+testkit.Tool(t, "everything")+`", "trust": true}}}`)
	if err := s.svc.MountConfig(context.Background(), file); err != nil {
		t.Fatal(err)
	}
	conf, example := s.row(t, "conf"), s.row(t, "example")
	if conf.GetState() != bridgev1.State_STATE_RUNNING || example.GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("rows: %v / %v", conf, example)
	}
	if conf.GetToolCount() != 3 || !contains(conf.GetToolsSkipped(), "over the cap of 3 tools (max_tools)") {
		t.Errorf("conf: tool_count %d, skipped %q", conf.GetToolCount(), conf.GetToolsSkipped())
	}
	bad := writeFile(t, "bad.json", `{"mcpServers":{"x":{"command":"a","url":"http://h/"}}}`)
	err := s.svc.MountConfig(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), `server "x": both "command" and "url" are set`) {
		t.Errorf("MountConfig(bad) = %v", err)
	}
	if s.row(t, "x") != nil {
		t.Error("a server of a refused file was mounted")
	}
}
