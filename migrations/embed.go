// Package migrations holds cairn's schema as SQL files, one folder per dialect, embedded in the
// binary and applied by bun/migrate (see persistence.Migrate).
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql mysql/*.sql
var files embed.FS

// PostgreSQL returns the migrations for PostgreSQL.
func PostgreSQL() fs.FS { return sub("postgres") }

// MySQL returns the migrations for MariaDB and MySQL.
func MySQL() fs.FS { return sub("mysql") }

// SQLite returns the migrations for SQLite.
func SQLite() fs.FS { return sub("sqlite") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // the folders are embedded above; a failure here is a build defect
	}
	return f
}
