/*
 * db_lang.c - schema version 12: a submission's language (sub_lang.h),
 * the column submissions.lang, and its reading.
 *
 * db.c runs the migration in its transaction; db_sub.c stores the
 * language with every insert and reads it back through db_col_lang for
 * api_json.c (the submission JSON, listings), db_rank.c (rankings rows)
 * and api_runner.c (the claimed job's "lang"). Rows stored before version
 * 12 are CUDA, the only language there was. The CHECK list already holds
 * 'ptx', so PTX submissions will need no migration.
 */
#include "db_int.h"
#include "sub_lang.h"

#include <stdio.h>
#include <string.h>

/* Version 12. Skipped when the column is already there, so it is
 * self-contained whatever version precedes it. */
int db_migrate_v12(struct db *db, struct kj_err *err)
{
    return db_add_column(db, "lang", "TEXT NOT NULL DEFAULT 'cuda' CHECK (lang IN "
                         "('cuda','python','ptx'))", err);
}

int db_col_lang(struct kj_err *err, sqlite3_stmt *st, int i, int *out)
{
    const char *v = (const char *)sqlite3_column_text(st, i);
    char safe[40];
    if (!KJ_NEVER(sub_lang_parse(v != NULL ? v : "", out) != 0))
        return 0;
    kj_printable(safe, sizeof safe, v != NULL ? v : "(null)", 32);
    return KJ_FAIL(err, KJ_EINTERNAL, "the database holds an unknown language '%s'", safe);
}
