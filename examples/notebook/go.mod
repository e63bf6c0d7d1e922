module github.com/switchboard-run/switchboard/examples/notebook

go 1.27.3
