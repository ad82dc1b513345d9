// Package views holds boxoffice's templ components: one .templ file per page
// or feature, each with its page and fragments. Every sentence a person reads
// lives here.
package views
