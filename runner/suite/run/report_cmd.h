/* `run_suite report RUN_DIR... [-o report.html]`: the report generator (results/report.py, Python
 * with matplotlib) started without a shell; it
 * dies with run_suite, and a stop signal run_suite gets is passed on to it. The interpreter is $SUITE_PYTHON, else the system's
 * /usr/bin/python3 (where Debian's python3-matplotlib installs), else python3 on PATH; the script
 * is $SUITE_REPORT_SCRIPT, else results/report.py of the source tree run_suite was built from. */
#ifndef SUITE_REPORT_CMD_H
#define SUITE_REPORT_CMD_H

/* argv[0] is "report"; the rest is parsed by its option table (runner/cli.h: -o and --reference,
 * each once), the run folders checked to be folders and the page's place by the rule of every
 * output (base/output_path.h: never a device, a FIFO or a file of the runs it reads), all before
 * the script starts; then the script. Returns the exit status to use: 128+N when stopped by N. */
int report_main(int argc, char **argv);
/* Runs the script with args (count of them) and waits; its exit status, or 2 when the script is
 * missing, 1 when it could not be started, 128+N when run_suite or the script was stopped by N. */
int report_run(char *const *args, int count);

#endif
