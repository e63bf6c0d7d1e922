package mcpserve

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A mounted server's log messages during a call reach the client that
// asked for them: in a session by logging/setLevel, in the stateless era
// by the call's _meta logLevel. The level travels to the bridge in the
// invocation's mcp_params; the bridge reports the messages as notes on the
// invocation, and the call's relay sends each on as notifications/message
// (docs/mcp.md, "Log messages").

// sessionLevels are the levels sessions set with logging/setLevel: the SDK
// keeps them where the endpoint cannot read them.
type sessionLevels struct{ m sync.Map } // *mcp.ServerSession → mcp.LoggingLevel

// track is the receiving middleware that records each session's level.
func (l *sessionLevels) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "logging/setLevel" || err != nil {
			return res, err
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		p, isLevel := req.GetParams().(*mcp.SetLoggingLevelParams)
		if ok && isLevel && p != nil {
			if _, known := l.m.Swap(ss, p.Level); !known {
				go func() { _ = ss.Wait(); l.m.Delete(ss) }()
			}
		}
		return res, err
	}
}

// level is the log level req's client asked for; "" when it asked for
// none.
func (l *sessionLevels) level(req *mcp.CallToolRequest) mcp.LoggingLevel {
	if req.Params != nil {
		if v, ok := req.Params.Meta[mcp.MetaKeyLogLevel].(string); ok {
			return mcp.LoggingLevel(v)
		}
	}
	if req.Session == nil {
		return ""
	}
	v, _ := l.m.Load(req.Session)
	level, _ := v.(mcp.LoggingLevel)
	return level
}
