// Package migrations embeds the numbered migrations (goose format) that the
// binary applies at start-up: SQL files, and Go ones (Go) where SQL cannot
// say it.
package migrations

import "embed"

// FS holds the migrations, applied in the order of their numbers: the SQL
// files, and the Go files, whose functions Go returns (embedded too, so
// that goose sees their versions and a change to one changes FS).
//
//go:embed *.sql 0*.go
var FS embed.FS
