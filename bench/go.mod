module github.com/switchboard-run/switchboard/bench

go 1.26.0

require github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
