// Package migrations embeds the numbered SQL migrations (goose format) that the
// binary applies at start-up.
package migrations

import "embed"

// FS holds the *.sql migrations, applied in the order of their numbers.
//
//go:embed *.sql
var FS embed.FS
