module github.com/switchboard-run/switchboard/examples/petstore

go 1.27.3
