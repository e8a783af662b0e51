/*
** commands.c -- the pagedb shell's command table: dispatch and .help.
**
** One table serves the dispatch (a command may be abbreviated to any
** unambiguous prefix), the one-line help (.help) and each command's
** paragraph with an example (.help COMMAND).  The paragraphs say what
** doc/shell.md says at more length; test/shell.test checks that every
** command of this table is documented in doc/shell.md and in the manual
** page (doc/pagedb.1), so the three do not drift apart.
*/
#include "shell.h"
#include "xfer.h"

#include <string.h>

typedef struct DotCmd {
  const char *zName;
  DotFunc xFunc;
  const char *zUsage;       /* the synopsis */
  const char *zHelp;        /* one line, for .help */
  const char *zDetail;      /* a paragraph, for .help COMMAND (lines end in \n) */
  const char *zExample;     /* an example session, for .help COMMAND */
} DotCmd;

static const DotCmd aDotCmd[] = {
  { "attach", dotAttach, ".attach FILE [--keep|--offset N|--after]",
    "Append FILE's samples (ids kept, shifted or renumbered), commit",
    "Appends every committed sample of the dataset FILE (same page size and\n"
    "fields) and commits: with their ids (--keep, the default: an id already\n"
    "used fails the whole attach, which changes nothing), their ids plus N\n"
    "(--offset N, N may be negative) or new ids after the largest (--after).\n",
    "pagedb> .attach small.pagedb --offset 100\n"
    "attached 1 sample\n" },
  { "bail", dotBail, ".bail on|off",
    "Stop a script (or the command arguments) at the first error",
    "With on, a script read from standard input or .read, or the commands\n"
    "given as arguments, stop at the first command that fails (as -bail).\n",
    "pagedb> .bail on\n" },
  { "bench", dotBench, ".bench [N]",
    "Read N samples (all) and write them to a scratch copy: MB/s",
    "A quick benchmark of the open dataset: N samples (default all; each\n"
    "phase stops after 10 s) read in file order and in random order, then\n"
    "written to a scratch copy under $TMPDIR (or /tmp), committed and removed.\n",
    "pagedb> .bench 1000\n"
    "read sequential: 1000 samples, 100.0 MB in 0.231 s: 432.9 MB/s, 4329 samples/s\n" },
  { "changes", dotChanges, ".changes on|off",
    "After each command that changes samples, print how many",
    "With on, each command that writes, deletes or updates samples (.put,\n"
    ".delete, .import, .attach, an UPDATE with .writable on) is followed by\n"
    "the line \"changes: N   total_changes: T\", as in sqlite3.\n",
    "pagedb> .changes on\n"
    "pagedb> .delete 1-10\n"
    "deleted 10 samples\n"
    "changes: 10   total_changes: 10\n" },
  { "check", dotCheck, ".check [--quick]",
    "Check integrity; print each problem and the total",
    "Checks the dataset's integrity (pagedb_check): each problem on a line of\n"
    "its own with its page, sample and field, then \"ok\" or the number of\n"
    "problems (and the command fails).  --quick checks the structure only:\n"
    "no checksums, no decompression.\n",
    "pagedb> .check\n"
    "ok\n" },
  { "count", dotCount, ".count",
    "Print the number of committed samples",
    "Prints the number of committed samples (as SELECT count(*) FROM sample).\n",
    "pagedb> .count\n"
    "70000\n" },
  { "create", dotCreate, ".create [FILE] [--field NAME:TYPE[:CODEC[:LEVEL]][@ALIGN] ...] [--page-size N]",
    "Create and open a dataset (TYPE bytes|text|int|real|tensor:DTYPE:SHAPE, CODEC none|lz4|lz4hc)",
    "Creates the dataset FILE, which must not exist, with these fields in this\n"
    "order, and opens it.  Without FILE, the dataset the shell was started on\n"
    "when that file did not exist.  TYPE is bytes, text, int or real, or\n"
    "tensor:DTYPE:SHAPE (emb:tensor:float32:768, mel:tensor:float16:*,80;\n"
    "* a variable dimension); CODEC\n"
    "(bytes, text and tensor) none, lz4 (LEVEL: acceleration 1 to 65537) or lz4hc\n"
    "(LEVEL 1 to 12).  @ALIGN (1, 2, 4 ... 64; default 8 for bytes, 1 for\n"
    "text): values start at multiples of ALIGN, for zero-copy tensor views.\n"
    "N is a power of two from 64K to 1G (default 8M).  If anything fails,\n"
    "nothing is left behind.\n",
    "pagedb> .create cats.pagedb --field img:bytes --field label:int --page-size 64K\n" },
  { "delete", dotDelete, ".delete ID|LO-HI|WHERE-SQL",
    "Delete samples by id, id range or SQL condition on table sample, commit",
    "Deletes sample ID, the samples LO to HI, or those of table sample that\n"
    "the SQL condition selects, commits, and prints how many.  The space stays\n"
    "in the data file until .vacuum.\n",
    "pagedb> .delete label = 4 AND caption IS NULL\n"
    "deleted 3 samples\n" },
  { "dump", dotDump, ".dump [--schema-only|--data-only] [PATTERN ...]",
    "The catalog (tables matching the globs) as SQL text for sqlite3",
    "Writes the catalog as an SQL script, as sqlite3's .dump: each table's\n"
    "CREATE TABLE and an INSERT per row (meta, field, page, sample and the\n"
    "application's tables such as classes), the indexes, the views; sqlite3\n"
    "runs it to make a database of the catalog.  Table sample holds each\n"
    "value's length and checksum, not its bytes (.export writes those).  With\n"
    "PATTERNs, the tables and views whose names match: a view as a table of\n"
    "its rows, so .dump sample_info names what each column is.\n",
    "pagedb> .dump classes\n"
    "-- the catalog of pagedb dataset pets.pagedb (sizes and checksums: ...)\n"
    "PRAGMA foreign_keys=OFF;\n"
    "BEGIN TRANSACTION;\n"
    "CREATE TABLE classes(label INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
    "INSERT INTO \"classes\" VALUES(0,'cat');\n"
    "COMMIT;\n" },
  { "echo", dotEcho, ".echo on|off",
    "Print each command before it runs",
    "With on, each command (dot-command or SQL) is printed to the output\n"
    "before it runs, as with -echo: a script's output then shows its input.\n",
    "pagedb> .echo on\n"
    "pagedb> .count\n"
    ".count\n"
    "2\n" },
  { "exit", dotQuit, ".exit",
    "Exit (as .quit)",
    "Leaves the shell; the exit status is 1 if any command failed.\n",
    "pagedb> .exit\n" },
  { "export", dotExport, ".export DEST [--where SQL]",
    "Write samples as files in directory DEST, or as WebDataset tar DEST.tar[.gz]",
    "Writes the samples (those the SQL condition on table sample selects) in\n"
    "id order: into DEST.tar or DEST.tar.gz, members KEY.FIELD (field id_ as\n"
    "KEY.id), numbers as WebDataset's writers write them (\"3\"); or into the\n"
    "directory DEST, each sample's data at its path (an ImageFolder import).\n"
    "A WebDataset import then export gives back every member's name and\n"
    "bytes, but an INT member written otherwise (\"3\\n\") comes back as \"3\".\n",
    "pagedb> .export /tmp/threes.tar --where \"label = 3\"\n" },
  { "fields", dotFields, ".fields",
    "List the fields: number, name, type, codec",
    "Lists the dataset's fields: number, name, type and codec, in the output\n"
    "mode.\n",
    "pagedb> .fields\n"
    "0|__key__|TEXT|none\n"
    "1|cls|INT|none\n"
    "2|png|BYTES|none\n" },
  { "get", dotGet, ".get ID [FIELD] [FILE]",
    "Print sample ID (bytes: size and hex), or write FIELD's raw bytes to FILE",
    "Prints sample ID's fields, name = value each (or only FIELD's value):\n"
    "numbers and text as they are, bytes as their size and the first 16 in\n"
    "hex.  With FILE, FIELD's raw bytes go to FILE, - for standard output.\n",
    "pagedb> .get 1 caption\n"
    "a small cat\n"
    "pagedb> .get 1 img cat.jpg\n" },
  { "headers", dotHeaders, ".headers on|off",
    "Print column names in list, csv and column modes",
    "With on, SQL results in list and csv modes start with the column names\n"
    "(table, box, line and json modes always show them; column mode unless\n"
    ".headers off).  On by default in an interactive session, off in scripts,\n"
    "as in sqlite3's list mode.\n",
    "pagedb> .headers on\n"
    "pagedb> SELECT id, cls FROM sample LIMIT 1;\n"
    "id|cls\n"
    "1|9\n" },
  { "help", dotHelp, ".help [COMMAND]",
    "Show this help, or one command's",
    "Without COMMAND, one line per command.  With a command's name (or a\n"
    "prefix only it has), its synopsis, this paragraph and an example; with a\n"
    "prefix several commands share, their lines.\n",
    "pagedb> .help import\n" },
  { "import", dotImport, IMPORT_USAGE,
    "Import an ImageFolder directory, WebDataset .tar/.tar.gz shards (glob) or a CSV file",
    "Imports with N writer threads, creating the dataset's fields if it has\n"
    "none (a dataset keeps the fields it has):\n"
    "  WebDataset shards (.tar, .tar.gz, .tgz, a glob): __key__ TEXT, and a field\n"
    "    per extension: .cls .cls2 .class .count .index .inx .id INT (decimal\n"
    "    text), .txt .text .transcript TEXT, .json .jsn TEXT (must be valid\n"
    "    JSON), any other BYTES; .id, .page and .off are the fields id_, page_\n"
    "    and off_ (id, page and off are table sample's own columns);\n"
    "  an ImageFolder directory: data BYTES, label INT (the class's index),\n"
    "    path TEXT; the class names go to the catalog table classes(label, name);\n"
    "  a CSV file with a header row: a column INT if every value is an integer,\n"
    "    REAL if a number, else TEXT.\n"
    "  .npy members: a tensor field of their dtype, each dimension fixed where\n"
    "    every member agrees and variable (*) where not (else BYTES).\n"
    "--field NAME:TYPE[:CODEC[:LEVEL]] overrides the type (and codec) of\n"
    "field NAME; TYPE may be tensor:DTYPE:SHAPE (emb:tensor:float32:768).\n"
    "A field of the dataset whose type differs from what the\n"
    "source holds is refused, naming the field.  --jobs N imports with N\n"
    "processes, each writing the samples of rank k mod N into a part\n"
    "NAME.parts/import-T-k, committed at the end, all or none.\n",
    "pagedb> .import fm-000000.tar\n"
    "pagedb> .import 'fm-*.tar' --field cls:text --codec lz4\n"
    "pagedb> SELECT cls, count(*) FROM sample GROUP BY cls;\n" },
  { "indexes", dotIndexes, ".indexes [TABLE]",
    "List the catalog's indexes (of TABLE)",
    "Lists the names of the catalog's indexes, or those of the tables whose\n"
    "names match the glob TABLE, as sqlite3's .indexes does.\n",
    "pagedb> .indexes\n"
    "sqlite_autoindex_field_1\n" },
  { "info", dotInfo, ".info",
    "Header (format, page size, data offset), counts, sizes, VFS",
    "Prints the data file's header (format, uuid, creation time, the offset\n"
    "of page 0), the files and their sizes, page size, fields, samples,\n"
    "pages, the VFS, and whether the dataset is open read-only.\n",
    "pagedb> .info\n" },
  { "mode", dotMode, ".mode [list|csv|json|line|table|box|column]",
    "Set the output mode",
    "Chooses how results print: list (cells separated by |), csv (RFC 4180),\n"
    "json, line (name = value), table (an ASCII grid), box (Unicode lines) or\n"
    "column (sqlite3's: padded columns, names underlined with dashes).\n"
    "Without an argument, prints the current mode.\n",
    "pagedb> .mode box\n"
    "pagedb> SELECT id, cls FROM sample LIMIT 1;\n" },
  { "nullvalue", dotNullvalue, ".nullvalue STRING",
    "Print NULL as STRING in SQL results",
    "SQL NULL prints as STRING (default: nothing) in list, csv, line, table\n"
    "and box modes; json prints null.\n",
    "pagedb> .nullvalue NULL\n"
    "pagedb> SELECT NULL;\n"
    "NULL\n" },
  { "once", dotOutput, ".once FILE|'|COMMAND'",
    "Send the next command's output to FILE (or a pipe to COMMAND)",
    "The output of the next command only goes to FILE (created or\n"
    "truncated), or with |COMMAND to COMMAND's standard input; then back to\n"
    "standard output.\n",
    "pagedb> .once counts.csv\n"
    "pagedb> SELECT cls, count(*) FROM sample GROUP BY cls;\n" },
  { "open", dotOpen, ".open [-readonly] [-vfs NAME] FILE",
    "Close the dataset and open FILE",
    "Closes the current dataset and opens FILE (the options stay for later\n"
    "opens).  When FILE does not exist, the first command that writes (.import,\n"
    ".put, .create) creates it; reading commands say it does not exist.\n",
    "pagedb> .open -readonly /data/cats.pagedb\n" },
  { "output", dotOutput, ".output [FILE|'|COMMAND']",
    "Send output to FILE (or a pipe to COMMAND); no argument: standard output",
    "Results and messages of later commands go to FILE (created or\n"
    "truncated), or with |COMMAND to COMMAND's standard input, until the next\n"
    ".output; .output alone goes back to standard output.  Errors always go to\n"
    "standard error.\n",
    "pagedb> .output fields.txt\n"
    "pagedb> .fields\n"
    "pagedb> .output\n" },
  { "pages", dotPages, ".pages [N]",
    "Per-run fill from the page table (the first N runs)",
    "The committed runs (the first N) from the page table: first page, pages,\n"
    "samples starting in it, bytes used (its 64-byte header included), fill.\n",
    "pagedb> .pages 2\n"
    "0|1|1|80|0.1%\n" },
  { "parts", dotParts, ".parts | .parts commit FILE ... [--keep|--offset N|--after] | .parts orphans [--age S] [--remove]",
    "List the dataset's parts, or commit datasets as new parts (all or none)",
    "Without arguments, the parts the dataset is made of (table part): number,\n"
    "where its data file is, samples, bytes its runs hold (samples and run\n"
    "headers; the page size's unused tails not counted), the id range and its\n"
    "name.\n"
    "With commit, the datasets FILE ... (same page size and fields, written by\n"
    "any process) become parts of this one in one commit, all or none, without\n"
    "copying their bytes: ids kept (--keep, the default), plus N (--offset N)\n"
    "or after the largest (--after).  .vacuum makes one file again.\n"
    "With orphans, the datasets under NAME.parts/ that no commit took, at least\n"
    "S seconds old (--age, default 0); --remove removes them.\n",
    "pagedb> .parts commit cats.pagedb.parts/a cats.pagedb.parts/b --after\n"
    "committed 2 parts, 2000 samples\n"
    "pagedb> .parts\n"
    "0|cats.pagedb.parts/a|1000|3008136|0|999|\n"
    "1|cats.pagedb.parts/b|1000|3008136|1000|1999|\n" },
  { "print", dotPrint, ".print STRING ...",
    "Print the STRINGs, separated by blanks",
    "Prints its arguments, separated by one blank, and a newline: a script's\n"
    "way to label its output.\n",
    "pagedb> .print 'samples per class:'\n"
    "samples per class:\n" },
  { "pull", dotPull, ".pull SRC DEST",
    "Download the remote dataset SRC to the local path DEST",
    "Downloads the dataset at SRC (s3://BUCKET/KEY, http:// or https://) to\n"
    "DEST (a path, or a directory to put it in): data file, index file if any,\n"
    "then catalog, each under a temporary name, synced and renamed\n"
    "(pagedb_pull).  Existing files are never overwritten.\n",
    "pagedb> .pull s3://sets/imagenet.pagedb /data/\n"
    "pulled s3://sets/imagenet.pagedb to /data/\n" },
  { "push", dotPush, ".push DEST",
    "Copy the committed dataset to s3://, an http(s) PUT URL or a directory",
    "Copies the open dataset's committed samples to DEST (pagedb_push):\n"
    "s3://BUCKET/KEY (multipart upload for the data file), an http(s) URL\n"
    "that takes PUT, or a local path or directory (e.g. one a web server\n"
    "serves).  A DEST ending in / gets the dataset's file name.  The catalog\n"
    "goes last: a push that fails part way leaves nothing that opens.\n",
    "pagedb> .push s3://sets/\n"
    "pushed imagenet.pagedb to s3://sets/\n" },
  { "put", dotPut, ".put ID|auto FIELD=VALUE|FIELD=@FILE ...",
    "Write one sample (VALUE, or FILE's bytes) and commit",
    "Writes one sample and commits.  VALUE is text for BYTES and TEXT fields,\n"
    "a number for INT and REAL; @FILE gives FILE's bytes (@@x is the value\n"
    "@x).  auto lets the engine pick the id, which is printed.  In a dataset\n"
    "without fields, the fields are made from the values: INT for integers,\n"
    "REAL for other numbers, BYTES for @FILE, TEXT otherwise.\n",
    "pagedb> .put 1 img=@cat.jpg label=3 'caption=a small cat'\n"
    "pagedb> .put auto label=4\n"
    "2\n" },
  { "quit", dotQuit, ".quit",
    "Exit",
    "Leaves the shell; the exit status is 1 if any command failed.\n",
    "pagedb> .quit\n" },
  { "read", dotRead, ".read FILE",
    "Run the commands of FILE",
    "Reads FILE as a script: dot-commands and SQL, one command a line, SQL up\n"
    "to a ';'.  An error names the line; with .bail on it stops the script.\n",
    "pagedb> .read report.sql\n" },
  { "schema", dotSchema, ".schema [--indent] [PATTERN]",
    "The catalog's SQL schema (tables matching PATTERN)",
    "Prints the CREATE statements of the catalog's tables, views and indexes\n"
    "(those whose names match the glob PATTERN); --indent puts each column\n"
    "of a table on a line of its own.\n",
    "pagedb> .schema --indent sample\n"
    "CREATE TABLE sample(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  ...\n" },
  { "shell", dotSystem, ".shell CMD ARGS ...",
    "Run CMD ARGS in /bin/sh",
    "Runs the command line through /bin/sh, as sqlite3 does; a non-zero exit\n"
    "status is an error.  .system is the same.\n",
    "pagedb> .shell ls -l cats.pagedb\n" },
  { "show", dotShow, ".show",
    "Show the current settings",
    "Prints the shell's settings: echo, headers, mode, nullvalue, output,\n"
    "widths, bail, timer, changes, writable, the dataset and the VFSes.\n",
    "pagedb> .show\n" },
  { "stats", dotStats, ".stats",
    "Space, compression per field, fill histogram, I/O",
    "Where the bytes of the committed pages go (stored values, dead bytes,\n"
    "run headers, unused page ends), compression per field, this handle's\n"
    "I/O, and the runs by fill.\n",
    "pagedb> .stats\n" },
  { "system", dotSystem, ".system CMD ARGS ...",
    "Run CMD ARGS in /bin/sh (as .shell)",
    "The same as .shell.\n",
    "pagedb> .system du -h cats.pagedb\n" },
  { "tables", dotTables, ".tables [PATTERN]",
    "List the catalog's tables and views (matching PATTERN)",
    "Lists the names of the catalog's tables and views (those matching the\n"
    "glob PATTERN): sample is the one with a row per sample.\n",
    "pagedb> .tables\n"
    "extent  field  meta  page  sample\n" },
  { "timer", dotTimer, ".timer on|off",
    "Print the time each command takes",
    "After each command, the time it took, as sqlite3 prints it.\n",
    "pagedb> .timer on\n"
    "pagedb> .count\n"
    "2\n"
    "Run Time: real 0.000 user 0.000000 sys 0.000003\n" },
  { "tokens", dotTokens, ".tokens FIELD [BLOCK_SIZE]",
    "Show token field FIELD's stream: documents, tokens, blocks, map stored or built",
    "Opens the token stream of FIELD (a tensor field of one variable dimension\n"
    "and an integer dtype, e.g. tensor:uint16:*): its documents (samples of at\n"
    "least one token), tokens, the blocks of BLOCK_SIZE + 1 tokens (default\n"
    "2048) it holds, and whether its token map is stored in the index file\n"
    "(stored: every commit keeps it, so the open costs O(1)) or was built in\n"
    "memory at the open (built: an index written by an older pagedb, or none).\n",
    "pagedb> .tokens tok 1024\n"
    "tok|1000|1048576|1024|1023|stored\n" },
  { "vacuum", dotVacuum, ".vacuum [INTO FILE] [--page-size N] [--codec FIELD CODEC]...",
    "Rewrite without deleted samples and unused page ends",
    "Rewrites the live samples without the space deleted samples and unused\n"
    "page ends take: in place (atomically), or INTO the new dataset FILE.\n"
    "--page-size gives the copy another page size; --codec recompresses\n"
    "FIELD with CODEC (zstd:19; zstd-dict trains a dictionary on the field's\n"
    "values first).  Prints the new size.\n",
    "pagedb> .vacuum INTO small.pagedb\n"
    "small.pagedb: 65616 bytes (was 131139)\n" },
  { "vfs", dotVfs, ".vfs [NAME]",
    "List the VFSes and whether each works; use NAME from the next open",
    "Lists the registered VFSes, the default, which the next open uses, and\n"
    "whether each works for files beside the open dataset.  With NAME, the\n"
    "next .open or .create uses that VFS.\n",
    "pagedb> .vfs io_uring\n" },
  { "width", dotWidth, ".width N1 N2 ...",
    "Column widths in column, table and box modes (-N right-aligns, 0 auto)",
    "Sets the widths of the first columns of column, table and box output, in\n"
    "characters, as sqlite3's .width: N makes the column N wide, a longer\n"
    "value wrapping onto more lines (the name is cut at N); -N the same,\n"
    "right-aligned; 0 as wide as its widest value.  .width alone resets all.\n",
    "pagedb> .mode table\n"
    "pagedb> .width 4 -6\n"
    "pagedb> SELECT 'abcdef' AS name, 42 AS n;\n"
    "+------+--------+\n"
    "| name |   n    |\n"
    "+------+--------+\n"
    "| abcd |     42 |\n"
    "| ef   |        |\n"
    "+------+--------+\n" },
  { "writable", dotWritable, ".writable on|off",
    "Let SQL change INT/REAL field values (UPDATE sample SET ...)",
    "With on, SQL that writes runs through pagedb_sql_update, which lets it\n"
    "change the values of INT and REAL fields and nothing else; the change is\n"
    "committed at once.\n",
    "pagedb> .writable on\n"
    "pagedb> UPDATE sample SET label = 3 WHERE label = 7;\n" },
};
#define N_DOTCMD ((int)(sizeof(aDotCmd) / sizeof(aDotCmd[0])))

/* The command AZARG names: exact, or the one it is a prefix of.  NULL,
** with *PNMATCH 0 (unknown) or > 1 (ambiguous), if none. */
static const DotCmd *findCmd(const char *zName, int *pnMatch){
  const DotCmd *pCmd = 0;
  size_t len = strlen(zName);
  int nMatch = 0;
  for(int i = 0; i < N_DOTCMD; i++){
    if( strcmp(aDotCmd[i].zName, zName) == 0 ){ *pnMatch = 1; return &aDotCmd[i]; }
    if( strncmp(aDotCmd[i].zName, zName, len) == 0 ){ pCmd = &aDotCmd[i]; nMatch++; }
  }
  *pnMatch = nMatch;
  return nMatch == 1 ? pCmd : 0;
}

int shellDispatch(ShellState *p, int nArg, char **azArg){
  int nMatch;
  const DotCmd *pCmd = findCmd(azArg[0], &nMatch);
  if( pCmd == 0 ){
    shellError(p, ".%s: %s command (see .help)", azArg[0], nMatch ? "ambiguous" : "unknown");
    return 1;
  }
  azArg[0] = (char *)pCmd->zName;
  p->zCmdName = pCmd->zName;
  int rc = pCmd->xFunc(p, nArg, azArg);
  p->zCmdName = 0;
  return rc;
}

static void helpLine(ShellState *p, const DotCmd *c){
  if( strlen(c->zUsage) > 28 ){
    fprintf(p->out, "%s\n%-28s %s\n", c->zUsage, "", c->zHelp);
  }else{
    fprintf(p->out, "%-28s %s\n", c->zUsage, c->zHelp);
  }
}

/* USAGE: .help [COMMAND]
** One line per command; for a command (a name or a prefix only it has),
** its synopsis, paragraph and example; for a prefix several share, their
** lines. */
int dotHelp(ShellState *p, int nArg, char **azArg){
  if( nArg > 2 ){ shellError(p, ".help: unexpected argument \"%s\"", azArg[2]); return 1; }
  if( nArg == 1 ){
    for(int i = 0; i < N_DOTCMD; i++) helpLine(p, &aDotCmd[i]);
    fprintf(p->out, "%-28s %s\n", "SQL;", "Anything else: SQL on the catalog (read-only)");
    return 0;
  }
  const char *zWant = azArg[1] + (azArg[1][0] == '.');
  int nMatch;
  const DotCmd *c = findCmd(zWant, &nMatch);
  if( c ){
    fprintf(p->out, "%s\n\n%s\nExample:\n", c->zUsage, c->zDetail);
    for(const char *z = c->zExample; *z; ){
      const char *e = strchr(z, '\n');
      size_t n = e ? (size_t)(e - z) : strlen(z);
      fprintf(p->out, "  %.*s\n", (int)n, z);
      z += n + (e != 0);
    }
    return 0;
  }
  if( nMatch == 0 ){
    shellError(p, ".help %s: no such command", azArg[1]);
    return 1;
  }
  for(int i = 0; i < N_DOTCMD; i++){
    if( strncmp(aDotCmd[i].zName, zWant, strlen(zWant)) == 0 ) helpLine(p, &aDotCmd[i]);
  }
  return 0;
}
