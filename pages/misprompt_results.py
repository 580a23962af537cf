"""Placeholder: this page is being built."""

import streamlit as st

st.title("misprompt_results")
st.info("This page is not built yet.")
