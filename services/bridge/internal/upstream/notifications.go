package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the server says outside any reply: a changed tool list, progress,
// log messages. The SDK calls these handlers on its reading goroutine.

func (s *Session) onListChanged(context.Context, *mcp.ToolListChangedRequest) {
	// Runs on the SDK's reading goroutine, which a tools/list would need:
	// hand the work to relistLoop, coalescing a burst into one listing.
	select {
	case s.relist <- struct{}{}:
	default:
	}
}

func (s *Session) relistLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.life.Done():
			return
		case <-s.relist:
		}
		s.mu.Lock()
		cs, gen := s.cs, s.gen
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(s.life, listTimeout)
		tools, err := s.list(ctx, cs)
		cancel()
		if err != nil {
			if s.life.Err() == nil {
				s.opts.OnFault(fmt.Sprintf("re-listing tools after notifications/tools/list_changed failed: %v", err))
			}
			continue
		}
		s.mu.Lock()
		current := gen == s.gen
		if current {
			s.tools = tools
		}
		s.mu.Unlock()
		if current {
			s.opts.OnTools(tools)
		}
	}
}

// watchProgress sends the progress notifications for token to f while a
// call with that token runs.
func (s *Session) watchProgress(token string, f func(*mcp.ProgressNotificationParams)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress[token] = f
}

func (s *Session) unwatchProgress(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.progress, token)
}

func (s *Session) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	if token, ok := p.ProgressToken.(string); ok {
		s.mu.Lock()
		f := s.progress[token]
		s.mu.Unlock()
		if f != nil {
			f(p)
		}
	}
	total := ""
	if p.Total > 0 {
		total = fmt.Sprintf("/%g", p.Total)
	}
	msg := ""
	if p.Message != "" {
		msg = " " + p.Message
	}
	s.opts.OnNotice(fmt.Sprintf("progress %v: %g%s%s", p.ProgressToken, p.Progress, total, msg))
}

func (s *Session) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	data, ok := p.Data.(string)
	if !ok {
		b, _ := json.Marshal(p.Data)
		data = string(b)
	}
	logger := ""
	if p.Logger != "" {
		logger = " " + p.Logger
	}
	s.opts.OnNotice(fmt.Sprintf("log %s%s: %s", p.Level, logger, data))
}
