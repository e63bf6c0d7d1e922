module github.com/switchboard-run/switchboard/tests

go 1.26.0
