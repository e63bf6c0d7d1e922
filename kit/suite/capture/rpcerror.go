package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// RPCError is a JSON-RPC error object, as a capture's mcp_error holds it:
// the error an MCP server answered tools/call with instead of a result.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Encode is the error as mcp_error's JSON text.
func (e RPCError) Encode() string {
	b, err := json.Marshal(e)
	if err != nil { // only a Data that is not JSON: leave it out
		e.Data = nil
		b, _ = json.Marshal(e)
	}
	return string(b)
}

// ParseRPCError reads mcp_error strictly: an object of code, message and
// optionally data, nothing else.
func ParseRPCError(text string) (RPCError, error) {
	var e struct {
		Code    *int            `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return RPCError{}, fmt.Errorf("capture: mcp_error is not a JSON-RPC error object (code, message, data): %v", err)
	}
	if dec.More() {
		return RPCError{}, errors.New("capture: mcp_error holds more than one JSON value")
	}
	if e.Code == nil || e.Message == nil {
		return RPCError{}, fmt.Errorf("capture: mcp_error %.200s lacks its code or its message", text)
	}
	return RPCError{Code: *e.Code, Message: *e.Message, Data: e.Data}, nil
}
