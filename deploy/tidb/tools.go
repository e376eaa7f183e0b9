//go:build tools

// Package tools names tidb-server, so that `go mod tidy` keeps what it needs.
package tools

import _ "github.com/pingcap/tidb/cmd/tidb-server"
