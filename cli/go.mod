module github.com/switchboard-run/switchboard/cli

go 1.26.0

require (
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
