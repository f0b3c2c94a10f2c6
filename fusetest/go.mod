module github.com/shale-db/shale/fusetest

go 1.25.0

require (
	github.com/cockroachdb/errors v1.14.0
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/shale-db/shale v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.39.0
)

require (
	github.com/cockroachdb/logtags v0.0.0-20230118201751-21c54148d20b // indirect
	github.com/cockroachdb/redact v1.1.5 // indirect
	github.com/getsentry/sentry-go v0.46.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/rogpeppe/go-internal v1.9.0 // indirect
	golang.org/x/text v0.32.0 // indirect
)

replace github.com/shale-db/shale => ../
