module cprof.test/hashsort

go 1.19
