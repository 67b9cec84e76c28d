"""Nsight Compute (ncu) and Nsight Systems (nsys) around the workbench's NVTX ranges.

`tools` finds the programs, `target` is the child that opens the ranges, `ncu`/`nsys` build the
command lines, `ncureport`/`nsysreport` read the reports into pandas, `summary` shapes the tables,
`toolerrors` turns tool output into Problems, `session` ties one profile run together and `saved`
finds the stored ones. The findings are made above, where a summary is read
(`diagnosis.diagnose_profile`). Nothing here imports torch; pandas is imported only inside the
functions that parse.
"""
