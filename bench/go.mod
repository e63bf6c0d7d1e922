module github.com/switchboard-run/switchboard/bench

go 1.26.0
