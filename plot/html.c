/* SPDX-License-Identifier: MIT */
/*
 * html.c - the picture as one self-contained HTML page: uPlot (the
 * dashboard's chart library, embedded at build time) and the grid's M4
 * points as JSON, one chart per unit, their time axes zoomed together
 * (drag to zoom, double-click to reset), events as dashed lines.  The
 * page loads nothing from the network: it opens from a mail or a USB key.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "plot/plot-private.h"

/* A JSON string safe inside <script>: basic_json_string's text with '<'
   written as \u003c, so no name can close the script element. */
static void script_string(FILE *f, const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) {
		fputs("\"\"", f);
		return;
	}
	basic_json_string(m, s);
	if (fclose(m) != 0) {
		free(buf);
		fputs("\"\"", f);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '<')
			fputs("\\u003c", f);
		else
			fputc(buf[i], f);
	}
	free(buf);
}

/* Seconds since the epoch as uPlot takes them, to the microsecond (a
   double holds that much at today's times). */
static void seconds(FILE *f, int64_t t)
{
	int64_t s = t / 1000000000, us = (t % 1000000000) / 1000;
	if (us < 0) {
		s -= 1;
		us += 1000000;
	}
	fprintf(f, "%lld.%06lld", (long long)s, (long long)us);
}

static void series_json(FILE *f, const plot_t *p, int s, int64_t lo, int64_t hi)
{
	const struct plot_series *se = &p->s[s];
	fputs("{\"name\":", f);
	script_string(f, se->name);
	fprintf(f, ",\"panel\":%d,\"points\":%llu,\"t\":[", se->panel, (unsigned long long)se->points);
	int64_t gap = plot_gap_ns(p, s, lo, hi, 1000);
	/* times, then values: a null value after a gap breaks the line */
	for (int pass = 0; pass < 2; pass++) {
		bool first = true, have = false;
		int64_t tprev = 0;
		for (int i = 0; i < PLOT_BUCKETS; i++) {
			int64_t t[4];
			double v[4];
			int n = se->b[i].n ? plot_bucket_points(&se->b[i], t, v) : 0;
			for (int k = 0; k < n; k++) {
				if (have && t[k] - tprev > gap) {
					/* the gap's marker, one microsecond after the last point */
					if (!first)
						fputc(',', f);
					if (pass == 0)
						seconds(f, tprev + 1000);
					else
						fputs("null", f);
					first = false;
				}
				if (!first)
					fputc(',', f);
				if (pass == 0)
					seconds(f, t[k]);
				else
					fprintf(f, "%.15g", v[k]);
				first = false;
				have = true;
				tprev = t[k];
			}
		}
		fputs(pass == 0 ? "],\"v\":[" : "]}", f);
	}
}

static const char PAGE_JS[] =
	"const C=['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2','#7f7f7f','#bcbd22','#17becf'];\n"
	"document.title=P.title||'railmon plot';\n"
	"document.getElementById('title').textContent=P.title||'';\n"
	"const tz=P.utc?(ts=>uPlot.tzDate(new Date(ts*1e3),'Etc/UTC')):(ts=>new Date(ts*1e3));\n"
	"const plots=[];let busy=false;\n"
	"function events(u){const c=u.ctx,t=u.bbox.top,h=u.bbox.height;c.save();c.strokeStyle='rgba(150,25,25,.7)';"
	"c.fillStyle='#962020';c.setLineDash([4,3]);c.font=(10*devicePixelRatio)+'px sans-serif';c.textAlign='center';"
	"P.events.forEach((e,i)=>{const x=Math.round(u.valToPos(e[0],'x',true));if(x<u.bbox.left||x>u.bbox.left+u.bbox.width)return;"
	"c.beginPath();c.moveTo(x,t);c.lineTo(x,t+h);c.stroke();if(i<64&&e[1])c.fillText(e[1],x,t+12*devicePixelRatio*(1+i%2));});c.restore();}\n"
	"P.panels.forEach((unit,pi)=>{\n"
	" const ss=P.series.filter(s=>s.panel===pi);\n"
	" const data=uPlot.join(ss.map(s=>[s.t,s.v]));\n"
	" const div=document.createElement('div');div.className='panel';document.getElementById('plots').appendChild(div);\n"
	" const o={width:Math.max(480,window.innerWidth-40),height:300,tzDate:tz,\n"
	"  cursor:{sync:{key:'railmon'},drag:{x:true,y:false}},scales:{x:{time:true}},\n"
	"  axes:[{label:P.utc?'time (UTC)':'time (local)'},{label:unit||'(no unit)'}],\n"
	"  series:[{}].concat(ss.map(s=>({label:s.name+(unit?' ['+unit+']':''),stroke:C[P.series.indexOf(s)%10],width:1.3,"
	"spanGaps:false,points:{show:s.t.length<300}}))),\n"
	"  hooks:{draw:[events],setScale:[(u,k)=>{if(k!=='x'||busy)return;busy=true;"
	"plots.forEach(v=>{if(v!==u)v.setScale('x',{min:u.scales.x.min,max:u.scales.x.max});});busy=false;}]}};\n"
	" plots.push(new uPlot(o,data,div));\n"
	"});\n"
	"window.railmonPlots=plots;\n";

int plot_write_html(const plot_t *p, FILE *f)
{
	if (!plot_uplot_js || !plot_uplot_css)
		return -ENOTSUP;
	int64_t lo, hi;
	if (!plot_extent(p, &lo, &hi))
		return -ENODATA;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"generator\" content=\"railmon plot\">\n<title>railmon plot</title>\n<style>\n", f);
	fputs(plot_uplot_css, f);
	fputs("\nbody{font-family:sans-serif;margin:16px}.panel{margin-bottom:12px}"
	      "#note{color:#555;font-size:13px}</style></head><body>\n<h1 id=\"title\" style=\"font-size:18px\"></h1>\n"
	      "<p id=\"note\">Drag across a chart to zoom all of them; double-click to go back. "
	      "Each point is a sample, or the first, last, lowest and highest of the samples a "
	      "pixel holds, so no spike is lost.</p>\n<div id=\"plots\"></div>\n<script>\n", f);
	fputs(plot_uplot_js, f);
	fputs("\n</script>\n<script>\nconst P={\"title\":", f);
	script_string(f, p->title ? p->title : "");
	fprintf(f, ",\"utc\":%s,\"lo\":", p->o.local_time ? "false" : "true");
	seconds(f, lo);
	fputs(",\"hi\":", f);
	seconds(f, hi);
	fputs(",\"panels\":[", f);
	for (int i = 0; i < p->npanels; i++) {
		if (i)
			fputc(',', f);
		script_string(f, p->panel_unit[i]);
	}
	fputs("],\"series\":[", f);
	for (int s = 0; s < p->nseries; s++) {
		if (s)
			fputc(',', f);
		series_json(f, p, s, lo, hi);
		fputc('\n', f);
	}
	fputs("],\"events\":[", f);
	bool first = true;
	for (size_t i = 0; i < p->nev; i++) {
		if (p->ev[i].t < lo || p->ev[i].t > hi)
			continue;
		fputs(first ? "[" : ",[", f);
		seconds(f, p->ev[i].t);
		fputc(',', f);
		script_string(f, p->ev[i].label);
		fputc(']', f);
		first = false;
	}
	fputs("]};\n", f);
	fputs(PAGE_JS, f);
	fputs("</script>\n</body></html>\n", f);
	return ferror(f) ? -EIO : 0;
}

int plot_write(const plot_t *p, const char *path, enum plot_format fmt)
{
	int64_t lo, hi;
	if (!plot_extent(p, &lo, &hi))
		return -ENODATA;
	if (fmt != PLOT_HTML)
		return plot_draw_cairo(p, path, fmt);
	if (!plot_uplot_js)
		return -ENOTSUP;
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	int r = plot_write_html(p, f);
	if (fclose(f) != 0 && !r)
		r = -errno;
	if (r)
		remove(path);
	return r;
}
