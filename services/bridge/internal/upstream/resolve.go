package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// resolves reports whether the driver takes a server's input requests as
// questions during the run rather than in an input_required result (a
// Task: it has no retry to carry the answers).
func (p *ClientParams) resolves() bool { return p != nil && p.Meta.Resolve }

// resolveInput answers a server's input_required result res for a driver
// that resolves (a Task): every input request is asked on the run at once
// (Hearing.Ask), and the call made again (call) with the answers and the
// server's requestState, until the server answers otherwise. Questions
// past contract.MaxQuestions for the run end it with a sentence.
func resolveInput(ctx context.Context, res *mcp.CallToolResult, from *ClientParams, ask askFunc,
	call func(*ClientParams) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	asked := 0
	for res != nil && res.InputRequests != nil {
		if asked += len(res.InputRequests); asked > contract.MaxQuestions {
			return nil, fmt.Errorf("the server asked %d questions in input_required results, more than the %d one call may ask", asked, contract.MaxQuestions)
		}
		answers, err := askAll(ctx, res.InputRequests, ask)
		if err != nil {
			return nil, err
		}
		next := *from
		next.InputResponses, next.RequestState = answers, res.RequestState
		if res, err = call(&next); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// askFunc asks the call's driver one request and returns its result.
type askFunc func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// askAll asks every request at once, so a driver may answer them in any
// order, and returns the answers under the requests' keys.
func askAll(ctx context.Context, requests mcp.InputRequestMap, ask askFunc) (mcp.InputResponseMap, error) {
	b, err := json.Marshal(requests)
	if err != nil {
		return nil, fmt.Errorf("the server's input requests cannot be passed on: %v", err)
	}
	var wire map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return nil, fmt.Errorf("the server's input requests cannot be passed on: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		answers  = make(map[string]json.RawMessage, len(wire))
		firstErr error
	)
	for key, r := range wire {
		wg.Go(func() {
			a, err := ask(ctx, r.Method, r.Params)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = askError(key, r.Method, err)
				cancel() // the call ends: its other questions are void
			}
			answers[key] = a
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	b, err = json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	var out mcp.InputResponseMap
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("the driver's answers are not what the server asked for: %v", err)
	}
	return out, nil
}

// askError says which of the server's requests was not answered; a
// client's JSON-RPC error keeps its code.
func askError(key, method string, err error) error {
	if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: fmt.Sprintf("input request %q (%s): the client answered: %s", key, method, rpcErr.Message)}
	}
	return fmt.Errorf("input request %q (%s) was not answered: %w", key, method, err)
}
